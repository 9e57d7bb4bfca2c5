"""Both workers of a pair, as the judge drives them: greeted, their code imported, their models built, the candidate
called on shared inputs, memory handed back; a Failed reply turned into the pair's verdict."""
from __future__ import annotations

import contextlib
import math
import os
from typing import Optional

import torch

from harness.common import channel, check, handover, protocol, procs
from harness.common.config import Config
from harness.common.extensions import build_failure, candidate_build_env
from harness.common.verdict import Status, Verdict
from harness.judge.memory import release_cached_memory
from harness.judge.reference import NO_CUDA, OUT_OF_MEMORY, Reference
from harness.judge.sandbox import Sandbox, WorkerFailure


class PairWorkers:
    """The candidate's worker and the reference's timing worker of one pair."""

    def __init__(self, job: protocol.PairJob, cfg: Config, device: torch.device, dtype, reference: Reference,
                 workers: tuple):
        self.job, self.cfg, self.device, self.dtype, self.reference = job, cfg, device, dtype, reference
        self.sandbox, self.ref_sandbox = workers  # the candidate's worker; the reference's timing worker
        # The reference's worker's scheduling before candidate code ran: PairTiming checks that only we change it.
        self.ref_schedule: Optional[procs.Schedule] = None
        self.on_reference_side = False  # inside reference_side(): a worker's failure there is the reference's
        self.reference_worker_called = False  # has the reference's timing worker made its first call (trial 1)?
        self.candidate_build_s = 0.0  # the candidate's worker's seconds in extension builds (forward's too)
        self.candidate_called = False  # has the candidate's worker made its first call (which may build)?

    def restart_state(self) -> None:
        """A stateful problem's second attempt starts where the first did: both models as constructed."""
        if self.reference.stateful:
            self.reference.restart()
            self.expect_ok(self.sandbox.request("restore_state", self.cfg.limits.timeout))

    def import_both(self) -> None:
        """Both workers greeted and their code imported at once (the candidate's extension builds run now)."""
        env = {}
        if self.device.type == "cuda" and "TORCH_CUDA_ARCH_LIST" not in os.environ:
            major, minor = torch.cuda.get_device_capability(self.device)
            env["TORCH_CUDA_ARCH_LIST"] = f"{major}.{minor}"  # build for this GPU only: much faster
        # The reference's worker as no candidate code has touched it: timing checks that it stays so (PairTiming).
        self.ref_schedule = procs.Schedule.read(self.ref_sandbox.proc.pid)
        # Only the candidate gets the build folders (and the lock, held until ModelNew is built).
        cold_cache = self.cfg.timing.cold_cache
        self.sandbox.greet(str(self.device), cold_cache, {**env, **candidate_build_env(self.job.build_dir)})
        with self.reference_side():
            self.ref_sandbox.greet(str(self.device), cold_cache, env)
        self.sandbox.send("import", path=self.job.solution_path, source=self.job.solution_source,
                          overrides=self.job.overrides, class_name="ModelNew", module_name="candidate_module",
                          problem=[self.reference.problem_source, self.job.problem_path])
        with self.reference_side():
            self.ref_sandbox.send("import", path=self.job.problem_path, source=self.reference.problem_source,
                                  overrides=self.job.overrides, class_name="Model", module_name="reference_module")
        self.expect_ok(self.sandbox.receive("import", self.cfg.limits.compile_timeout), self.sandbox)
        with self.reference_side():
            self.expect_ok(self.ref_sandbox.receive("import", self.cfg.limits.compile_timeout), self.ref_sandbox)

    def construct_both(self) -> float:
        """Both models built, the reference's first (the candidate never runs while its weights' copy is unread);
        the candidate's build seconds."""
        with self.reference_side():
            self.construct(self.ref_sandbox)
        reply = self.construct(self.sandbox)
        release_cached_memory(self.device, outboxes=self.outboxes())  # the weights' copy's pool, kept else in trial 1
        self.candidate_build_s = build_seconds(reply)
        return self.candidate_build_s

    def construct(self, sandbox: Sandbox) -> dict:
        """Build one worker's model (the reference's with a copy of our weights, the candidate's with its own)."""
        state = None
        if sandbox is self.ref_sandbox:
            assert sandbox.outbox is not None  # made when it was greeted
            state = sandbox.outbox.state_copy(self.reference.model.state_dict())
        self.hand_over()
        # A candidate may build its extension in __init__: construction gets the build's time limit too.
        dtype = None if self.dtype is None else str(self.dtype).removeprefix("torch.")
        limits = self.cfg.limits
        reply = sandbox.request("construct", limits.timeout + limits.compile_timeout, state_dict=state, dtype=dtype,
                                init_args=self.reference.init_args, init_seed=self.cfg.correctness.init_seed,
                                mode=self.cfg.mode)
        return self.expect_ok(reply, sandbox)

    def adopt_reference_weights(self) -> bool:
        """The reference's weights over the candidate's where names and shapes match; True when any changed."""
        constructed = {name: self.reference.constructed_buffers.get(name, value)
                       for name, value in self.reference.model.state_dict().items()}
        state = self.sandbox.outbox.state_copy(constructed)
        del constructed
        self.hand_over()
        reply = self.expect_ok(self.sandbox.request("adopt_weights", self.cfg.limits.timeout, state_dict=state))
        del state
        release_cached_memory(self.device, outboxes=self.outboxes())
        changed = reply.get("changed_tensors") if isinstance(reply, dict) else None
        return isinstance(changed, int) and changed > 0

    def expect_ok(self, reply: channel.Reply, sandbox: Sandbox | None = None):
        """The payload of an Ok reply; a Failed one ends the pair with its status."""
        if isinstance(reply, channel.Ok):
            return reply.payload
        status, message = reply.status, reply.message
        if status == Status.COMPILE_ERROR:  # torch quotes the whole build log: keep its gist
            message = build_failure(message, (sandbox or self.sandbox).log.text()) or message
        if self.device.type == "cpu" and NO_CUDA.search(message):
            raise Verdict(Status.SKIPPED, f"needs a CUDA GPU, device is cpu ({message})")
        if (status == Status.RUNTIME_ERROR and self.device.type == "cuda" and not self.on_reference_side
                and OUT_OF_MEMORY.search(message)):
            raise self.reference.memory.worker_out_of_memory(message)
        raise Verdict(status, message)

    def run_candidate(self, shared: list, ref_out, seed: int, restore: bool = False) -> dict:
        """One candidate call on the shared inputs, seeded as the reference's; its reply, structure-checked."""
        sizes = poison_sizes(ref_out)
        # Our cached blocks back: the candidate's library chooses its algorithm by the room it finds.
        release_cached_memory(self.device)
        self.hand_over()
        if restore and self.reference.stateful:
            self.expect_ok(self.sandbox.request("restore_state", self.cfg.limits.timeout))
        # A generation may build its extension in its first call: the build's seconds do not count against it.
        grace = 0 if self.candidate_called else self.cfg.limits.compile_timeout
        self.candidate_called = True
        reply = self.expect_ok(self.sandbox.request("run", self.cfg.limits.timeout, build_grace=grace, inputs=shared,
                                                    poison_sizes=sizes, seed=seed,
                                                    keep_state=bool(self.reference.stateful)))
        self.candidate_build_s = max(self.candidate_build_s, build_seconds(reply))
        problem = check.structure_problem(ref_out, reply)
        if problem:
            raise Verdict(Status.INCORRECT, problem)
        return reply

    def release_trial(self) -> None:
        """After a trial: the candidate's worker lets go of its call's tensors, and we of our cached blocks."""
        self.expect_ok(self.sandbox.request("release_outputs", self.cfg.limits.timeout))
        release_cached_memory(self.device, outboxes=self.outboxes())

    def reference_worker_first_call(self, inputs: list, ref_out, seed: int) -> None:
        """The reference's worker's first call, on trial 1's inputs beside what the candidate's first call will have
        (docs/decisions/judge-pair.md)."""
        if self.reference_worker_called:
            return
        # What the candidate's __init__ left cached (a warm-up call, say) back first.
        self.expect_ok(self.sandbox.request("release_memory", self.cfg.limits.timeout, workspaces=True))
        release_cached_memory(self.device, outboxes=self.outboxes())
        with self.reference_side():
            shared = self.ref_sandbox.outbox.copies(inputs)
            self.hand_over()
            self.expect_ok(self.ref_sandbox.request("run", self.cfg.limits.timeout, inputs=shared,
                                                    poison_sizes=poison_sizes(ref_out), seed=seed))
            del shared
            self.expect_ok(self.ref_sandbox.request("release_outputs", self.cfg.limits.timeout))
            self.expect_ok(self.ref_sandbox.request("release_memory", self.cfg.limits.timeout, workspaces=True))
        release_cached_memory(self.device, outboxes=self.outboxes())
        self.reference_worker_called = True  # (only now: a trial that ran out of memory first runs it again)

    def release_all_caches(self) -> None:
        """Both workers', then this process's cached GPU memory handed back (the GPU was full)."""
        with self.reference_side():
            self.ref_sandbox.request("release_memory", self.cfg.limits.timeout)
        self.sandbox.request("release_memory", self.cfg.limits.timeout)
        release_cached_memory(self.device, outboxes=self.outboxes())

    def outboxes(self) -> list:
        """Where the workers' handed tensors are allocated (each a pool of its own), once they are greeted."""
        return [s.outbox for s in (self.sandbox, self.ref_sandbox) if s is not None and s.outbox is not None]

    def hand_over(self) -> None:
        """Our GPU work done before a worker reads what we send it (handover.ready)."""
        handover.ready(self.device)

    @contextlib.contextmanager
    def reference_side(self):
        """A failure in here is the harness's, unless the candidate's worker held the memory it ran out of."""
        self.on_reference_side = True
        try:
            yield
        except (Verdict, WorkerFailure) as exc:
            message = f"the reference's timing worker failed: {exc}"
            raise self.blame_for_memory(message) or Verdict(Status.HARNESS_ERROR, message) from None
        finally:
            self.on_reference_side = False

    def blame_for_memory(self, message: str) -> Verdict | None:
        """Whose an out-of-memory of the judge or the reference's worker was (PairMemory.blame), if it was one."""
        return self.reference.memory.blame(message, self.sandbox.proc.pid, self.ref_sandbox.proc.pid)


def poison_sizes(ref_out) -> list:
    """The byte sizes of the reference's outputs: what a worker poisons free blocks of before a correctness call."""
    return [t.numel() * t.element_size() for t in check.items(ref_out)]


def build_seconds(reply: dict) -> float:
    """A worker's seconds in extension builds, as it says (a finite number of seconds, else 0)."""
    value = reply.get("build_s")
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return 0.0
    return round(float(value), 3)
