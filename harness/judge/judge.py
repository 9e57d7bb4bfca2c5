"""The trusted process of one pair: the reference side, both workers, comparisons, guards and statistics.

It imports the problem, never the candidate. Started by the runner (runner/judges.py) or forked from the judge factory,
it reads the run's config and its pair's job on stdin and reports its stages and Result on the runner's pipe (main();
the messages: common/protocol.py).
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Optional

import torch
from torch.utils.flop_counter import FlopCounterMode  # imported ahead of the pair: it takes a while

from harness.common import channel, check, handover, protocol, procs, stopping
from harness.common.config import Config, PRECISIONS
from harness.common.devices import is_gpu, torch_device
from harness.common.extensions import build_failure, candidate_build_env
from harness.common.procs import adopt_orphans, children, kill_orphans, make_undumpable, my_children
from harness.common.records import Result, failure, one_line
from harness.common.verdict import PASSING_FLAGS, Status, Verdict
from harness.judge.memory import dump_memory_history, record_memory_history, release_cached_memory
from harness.judge.reference import NO_CUDA, OUT_OF_MEMORY, Reference
from harness.judge.sandbox import Sandbox, WorkerFailure
from harness.judge.timing import PairTiming
from harness.judge.trials import Trials
from harness.worker import timing


class PairJudge:
    """Judges one (problem, candidate) pair on one device: correctness here, then timing (PairTiming)."""

    def __init__(self, job: protocol.PairJob, workers: tuple, helpers: frozenset, report=None):
        self.job, self.block = job, job.block
        self.cfg = job.config if self.block == 1 else confirmation_config(job.config)
        self.report = report  # the runner's pipe: each stage is announced there (Reporter.send)
        self.stage = "start"
        self.device = torch_device(job.device)
        # --precision: float inputs and both models' weights in this dtype (None: as the problem makes them).
        self.dtype = None if self.cfg.precision == "fp32" else getattr(torch, PRECISIONS[self.cfg.precision])
        self.result = Result(problem=job.problem, solution=job.solution, status=Status.CORRECT,
                             device=str(self.device), gpu=gpu_name(self.device), precision=self.cfg.precision,
                             mode=self.cfg.mode)
        self.reference = Reference(job, self.cfg, self.device, self.dtype, self.note, self.phase)
        self.sandbox, self.ref_sandbox = workers  # the candidate's worker; the reference's timing worker
        self.helpers = helpers  # our own children that are no orphans (torch's shared-memory manager)
        # The reference's worker's scheduling before candidate code ran: PairTiming checks that only we change it.
        self.ref_schedule: Optional[procs.Schedule] = None
        self.on_reference_side = False  # inside reference_side(): a worker's failure there is the reference's
        self.gated = False  # the runner says when to time (protocol.Go): judges ahead may be starting CUDA
        self.worker_threads = torch.get_num_threads()  # what the workers compute with (main() sets it)
        self.reference_worker_called = False  # has the reference's timing worker made its first call (trial 1)?
        self.trials = Trials(self)

    @property
    def memory(self):
        """The pair's memory accounting (the reference's PairMemory, sized when the problem loads)."""
        return self.reference.memory

    def restart_state(self) -> None:
        """A stateful problem's second attempt starts where the first did: both models as constructed."""
        if self.reference.stateful:
            self.reference.restart()
            self.expect_ok(self.sandbox.request("restore_state", self.cfg.timeout))

    def note(self, text: str) -> None:
        """A note for the result, once."""
        if text not in self.result.notes:
            self.result.notes.append(text)

    def import_both(self) -> None:
        """Both workers greeted and their code imported at once (the candidate's extension builds run now)."""
        env = {}
        if self.device.type == "cuda" and "TORCH_CUDA_ARCH_LIST" not in os.environ:
            major, minor = torch.cuda.get_device_capability(self.device)
            env["TORCH_CUDA_ARCH_LIST"] = f"{major}.{minor}"  # build for this GPU only: much faster
        # The reference's worker as no candidate code has touched it: timing checks that it stays so (PairTiming).
        self.ref_schedule = procs.Schedule.read(self.ref_sandbox.proc.pid)
        # Only the candidate gets the build folders (and the lock, held until ModelNew is built).
        self.sandbox.greet(str(self.device), self.cfg.cold_cache, {**env, **candidate_build_env(self.job.build_dir)})
        with self.reference_side():
            self.ref_sandbox.greet(str(self.device), self.cfg.cold_cache, env)
        self.sandbox.send("import", path=self.job.solution_path, source=self.job.solution_source,
                          overrides=self.job.overrides, class_name="ModelNew", module_name="candidate_module",
                          problem=[self.reference.problem_source, self.job.problem_path])
        with self.reference_side():
            self.ref_sandbox.send("import", path=self.job.problem_path, source=self.reference.problem_source,
                                  overrides=self.job.overrides, class_name="Model", module_name="reference_module")
        self.expect_ok(self.sandbox.receive("import", self.cfg.compile_timeout), self.sandbox)
        with self.reference_side():
            self.expect_ok(self.ref_sandbox.receive("import", self.cfg.compile_timeout), self.ref_sandbox)

    def construct_both(self) -> None:
        """Both models built, the reference's first: the candidate never runs while its weights' copy is unread."""
        with self.reference_side():
            self.construct(self.ref_sandbox)
        reply = self.construct(self.sandbox)
        self.result.compile_s = round(float(reply["build_s"]), 3)
        release_cached_memory(self.device, outboxes=self.outboxes())  # the weights' copy's pool, kept else in trial 1

    def construct(self, sandbox: Sandbox) -> dict:
        """Build one worker's model (the reference's with a copy of our weights, the candidate's with its own)."""
        state = None
        if sandbox is self.ref_sandbox:
            assert sandbox.outbox is not None  # made when it was greeted
            state = sandbox.outbox.state_copy(self.reference.model.state_dict())
        self.hand_over()
        # A candidate may build its extension in __init__: construction gets the build's time limit too.
        dtype = None if self.dtype is None else str(self.dtype).removeprefix("torch.")
        reply = sandbox.request("construct", self.cfg.timeout + self.cfg.compile_timeout, state_dict=state, dtype=dtype,
                                init_args=self.reference.init_args, init_seed=self.cfg.init_seed, mode=self.cfg.mode)
        return self.expect_ok(reply, sandbox)

    def adopt_reference_weights(self) -> bool:
        """The reference's weights over the candidate's where names and shapes match; True when any changed."""
        constructed = {name: self.reference.constructed_buffers.get(name, value)
                       for name, value in self.reference.model.state_dict().items()}
        state = self.sandbox.outbox.state_copy(constructed)
        del constructed
        self.hand_over()
        reply = self.expect_ok(self.sandbox.request("adopt_weights", self.cfg.timeout, state_dict=state))
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
            raise self.memory.worker_out_of_memory(message)
        raise Verdict(status, message)

    def run_candidate(self, shared: list, ref_out, seed: int, restore: bool = False) -> dict:
        """One candidate call on the shared inputs, seeded as the reference's; its reply, structure-checked."""
        sizes = poison_sizes(ref_out)
        # Our cached blocks back: the candidate's library chooses its algorithm by the room it finds.
        release_cached_memory(self.device)
        self.hand_over()
        if restore and self.reference.stateful:
            self.expect_ok(self.sandbox.request("restore_state", self.cfg.timeout))
        reply = self.expect_ok(self.sandbox.request("run", self.cfg.timeout, inputs=shared, poison_sizes=sizes,
                                                    seed=seed, keep_state=bool(self.reference.stateful)))
        problem = check.structure_problem(ref_out, reply)
        if problem:
            raise Verdict(Status.INCORRECT, problem)
        return reply

    def release_trial(self) -> None:
        """After a trial: the candidate's worker lets go of its call's tensors, and we of our cached blocks."""
        self.expect_ok(self.sandbox.request("release_outputs", self.cfg.timeout))
        release_cached_memory(self.device, outboxes=self.outboxes())

    def reference_worker_first_call(self, inputs: list, ref_out, seed: int) -> None:
        """The reference's worker's first call, on trial 1's inputs beside what the candidate's first call will have
        (docs/decisions/judge-pair.md)."""
        if self.reference_worker_called:
            return
        # What the candidate's __init__ left cached (a warm-up call, say) back first.
        self.expect_ok(self.sandbox.request("release_memory", self.cfg.timeout, workspaces=True))
        release_cached_memory(self.device, outboxes=self.outboxes())
        with self.reference_side():
            shared = self.ref_sandbox.outbox.copies(inputs)
            self.hand_over()
            self.expect_ok(self.ref_sandbox.request("run", self.cfg.timeout, inputs=shared,
                                                    poison_sizes=poison_sizes(ref_out), seed=seed))
            del shared
            self.expect_ok(self.ref_sandbox.request("release_outputs", self.cfg.timeout))
            self.expect_ok(self.ref_sandbox.request("release_memory", self.cfg.timeout, workspaces=True))
        release_cached_memory(self.device, outboxes=self.outboxes())
        self.reference_worker_called = True  # (only now: a trial that ran out of memory first runs it again)

    def release_all_caches(self) -> None:
        """Both workers', then this process's cached GPU memory handed back (the GPU was full)."""
        with self.reference_side():
            self.ref_sandbox.request("release_memory", self.cfg.timeout)
        self.sandbox.request("release_memory", self.cfg.timeout)
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
        return self.memory.blame(message, self.sandbox.proc.pid, self.ref_sandbox.proc.pid)

    @contextlib.contextmanager
    def phase(self, name: str):
        """Add a phase's wall seconds to `phases_s`; a top-level phase is a stage, announced to the runner."""
        if "." not in name:
            self.stage = name
            if self.report is not None:
                self.report.send(protocol.Stage(name))
        if self.device.type == "cuda":  # GPU work is asynchronous: charge it to the phase that queued it
            torch.cuda.synchronize(self.device)
        started = timing.now_ns()
        try:
            yield
        finally:
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
            phases = self.result.phases_s = self.result.phases_s or {}
            phases[name] = round(phases.get(name, 0.0) + (timing.now_ns() - started) / 1e9, 3)

    def run(self) -> Result:
        """Judge the pair; every path ends in exactly one Result."""
        record_memory_history(self.device)
        try:
            with self.phase("reference"):
                self.reference.load()
                self.memory.check(self.report)
                self.reference.build()
            with self.phase("build"):
                self.import_both()
            with self.phase("workers"):
                self.construct_both()
            with self.phase("correctness"):
                self.trials.run()
            self.reference.start_timing()
            PairTiming(self).time_pair()
        except Verdict as verdict:
            self.end_with(verdict)
        except WorkerFailure as failure_:
            self.end_with(Verdict(failure_.status, str(failure_)))
        except torch.cuda.OutOfMemoryError as exc:  # in this process: the reference's outputs, inputs or checks
            message = f"the judge ran out of GPU memory in stage '{self.stage}': {exc}"
            self.end_with(self.blame_for_memory(message) or Verdict(Status.HARNESS_ERROR, message))
        except Exception as exc:  # the harness's own failure, never the candidate's status
            traceback.print_exc()
            self.end_with(Verdict(Status.HARNESS_ERROR, f"harness error in stage '{self.stage}': "
                                                        f"{type(exc).__name__}: {exc} (traceback in the judge log)"))
        finally:
            with self.phase("finish"):
                self.finish()
        return self.result

    def end_with(self, verdict: Verdict) -> None:
        """The pair's status, reason and flags from the verdict that ended it."""
        self.result.status, self.result.error = verdict.status, one_line(verdict.error)
        if verdict.status != Status.CORRECT:  # how a trial passed says nothing of a verdict that failed
            self.result.flags = [f for f in self.result.flags if f not in PASSING_FLAGS]
        self.result.flags += verdict.flags

    def finish(self) -> None:
        """Stop both workers, keep the candidate's log, and record each process's peak memory."""
        if self.reference.stateful:
            self.result.stateful = True
        with self.phase("finish.workers"):
            infos = close_workers(self.sandbox, self.ref_sandbox, self.job.log_path)
        with self.phase("finish.orphans"):
            self.result.orphans_killed = kill_orphans(self.helpers) or None  # processes the workers left behind
        dump_memory_history(self.device, f"{self.job.problem}__{self.job.solution}")
        peak_mb = max(self.memory.peak_reserved / 2**20, timing.peak_memory_mb(self.device))
        record_peaks(self.result, peak_mb, infos, self.device.type == "cuda")


def close_workers(sandbox: Sandbox, ref_sandbox: Sandbox, log_path: str) -> dict:
    """Close both workers at once (docs/decisions/judge-pair.md), keep the candidate's log; their last words."""
    infos: dict = {}
    closing = threading.Thread(target=lambda: infos.update(reference=ref_sandbox.close()))
    if ref_sandbox is not None:
        closing.start()
    if sandbox is not None:
        infos["candidate"] = sandbox.close()
        Path(log_path).write_text(sandbox.log.text())
    if ref_sandbox is not None:
        closing.join()
    return infos


def record_peaks(result: Result, judge_mb: float, infos: dict, on_gpu: bool) -> None:
    """Each process's peak memory (MB) and, on a GPU, each worker's out-of-memory count (the workers' last words)."""
    candidate, reference = infos.get("candidate"), infos.get("reference")
    result.peak_mem_mb = {"judge": round(judge_mb, 1), "worker": reported_peak(candidate),
                          "reference_worker": reported_peak(reference)}
    if on_gpu:
        result.worker_ooms = {"worker": reported_count(candidate, "ooms"),
                              "reference_worker": reported_count(reference, "ooms")}


def confirmation_config(cfg: Config) -> Config:
    """A confirmation block's settings (runner/blocks.py): one trial, half the rounds and seconds, fresh workers."""
    return cfg.replace(trials=1, wide_trials=0, max_rounds=max(cfg.min_rounds, cfg.max_rounds // 2),
                       max_timing_s=cfg.max_timing_s / 2)


def poison_sizes(ref_out) -> list:
    """The byte sizes of the reference's outputs: what a worker poisons free blocks of before a correctness call."""
    return [t.numel() * t.element_size() for t in check.items(ref_out)]


def reported_count(info, key: str):
    """A worker's word on a count, checked; None when it gave none."""
    value = info.get(key) if isinstance(info, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def reported_peak(info):
    """A worker's word on its peak memory (MB), checked; None when it gave none."""
    try:
        peak = float(info["peak_mem_mb"])
    except (TypeError, KeyError, ValueError, OverflowError):
        return None
    return round(peak, 1) if math.isfinite(peak) else None


def gpu_name(device: torch.device):
    return torch.cuda.get_device_name(device) if device.type == "cuda" else None








def main() -> None:
    """Judge the pair whose job arrives on stdin; report its stages and Result on the original stdout.

    The job (with the run's secret) never touches the disk, the process is non-dumpable, and the Result leaves through a
    descriptor no worker inherits (docs/threat-model.md)."""
    make_undumpable()
    adopt_orphans()
    stopping.ignore_interrupts()  # a Ctrl-C is the runner's to act on: it kills us
    report = Reporter(os.dup(1))  # no worker keeps this descriptor (sandbox.become_worker)
    os.dup2(2, 1)  # anything printed from here on goes to the log, never into the protocol
    # Judges start ahead of their pairs: the workers fork before the job is read and before any device is touched.
    start = protocol.from_runner(read_line_unbuffered(0))
    if not isinstance(start, protocol.Start):
        raise SystemExit(f"the runner's first line must be its Start, got {start}")
    config, warm_device = start.config, start.warm_device
    start_up = StartUp(start.started_at)  # where a judge's start-up went (judge_start.* phases)
    if warm_device:
        ready_flop_counter()
        start_up.mark("flops")
    workers, helpers = start_workers(config)
    start_up.mark("workers")
    if warm_device:  # CUDA started when the runner says no pair on this GPU is timed
        report.send(protocol.ReadyToWarm())
    message = protocol.next_from_runner()
    if warm_device and isinstance(message, protocol.Warm):
        start_up.mark("held")
        warm_up_with_workers(warm_device, workers)
        start_up.mark("warm")
        report.send(protocol.Warmed())
        message = protocol.next_from_runner()
    if not isinstance(message, protocol.Job):  # End: the run ended before it needed this judge
        for worker in workers:
            worker.close()
        os._exit(0)
    report.send(protocol.Outcome(judge_pair(message, workers, helpers, report, start_up).to_dict()))
    sys.stdout.flush()
    os._exit(0)  # skip CUDA IPC teardown races at interpreter exit


def judge_pair(message: protocol.Job, workers: tuple, helpers: frozenset, report: "Reporter",
               start_up: "StartUp") -> Result:
    """The pair's Result; a bug before the pair began still yields one (harness_error), never a silent pair."""
    job, sent_at = message.job, message.sent_at
    waited_s = max(0.0, time.time() - (sent_at or time.time()))  # for a judge still starting up
    report.send(protocol.Workers([w.proc.pid for w in workers]))  # each leads its own process group
    worker_threads = torch.get_num_threads()  # the workers, forked before, keep PyTorch's default
    if not is_gpu(job.device):
        torch.set_num_threads(1)  # no thread of ours spins beside a timed call (judge_processes.GPU_ENV)
    try:
        if is_gpu(job.device):  # what PyTorch makes on "the current device" (memory pools) is the pair's
            torch.cuda.set_device(torch_device(job.device))
        judge = PairJudge(job, workers, helpers, report)
        judge.worker_threads, judge.gated = worker_threads, message.gated
        judge.result.phases_s = {"judge_start": round(waited_s, 3), **start_up.phases(sent_at)}
        return judge.run()
    except Exception as exc:
        traceback.print_exc()
        return failure(job.problem, job.solution, Status.HARNESS_ERROR,
                       f"harness error: {type(exc).__name__}: {exc} (traceback in the judge log)")


def start_workers(config: Config) -> tuple:
    """(the candidate's worker, the reference's), forked from us, and our own other children (helpers)."""
    # The candidate's worker first (confined); the reference's, forked second, holds a copy of its channel.
    workers = tuple(Sandbox({}, config.output_limit_bytes, config.kill_grace_s, confined=side == 0)
                    for side in range(2))
    # torch's shared-memory manager, started before candidate code runs, is a child of ours that no orphan kill takes.
    torch.empty(1).share_memory_()
    helpers = frozenset(my_children()) - {w.proc.pid for w in workers}
    ours = helpers | {w.proc.pid for w in workers}
    # Any other child of ours is an orphan a candidate's process left (we are its subreaper): the candidate's.
    workers[0].strays = lambda: [pid for pid in children(os.getpid()) if pid not in ours]
    return workers, helpers


def ready_flop_counter() -> None:
    """FlopCounterMode's first use, seconds of CPU, before the workers fork (docs/decisions/judge-pair.md)."""
    with FlopCounterMode(display=False):
        torch.ones(2).sigmoid()


class StartUp:
    """The wall seconds of a judge's start-up steps (judge_start.* phases): why a judge was late for its pair."""

    def __init__(self, started_at):
        self.last = started_at if isinstance(started_at, (int, float)) else None
        self.steps = {}
        self.mark("import")

    def mark(self, step: str) -> None:
        """The step that ends now."""
        now = time.time()
        if self.last is not None:
            self.steps[f"judge_start.{step}"] = round(max(0.0, now - self.last), 3)
        self.last = now

    def phases(self, sent_at) -> dict:
        """The steps, and the wait for the pair after them (negative waits: the pair was sent before it was ready)."""
        if self.last is not None and isinstance(sent_at, (int, float)):
            self.steps["judge_start.idle"] = round(max(0.0, sent_at - self.last), 3)
        return self.steps


def warm_up_with_workers(device: str, workers: tuple) -> None:
    """Start CUDA here and in both workers at once (docs/decisions/judge-pair.md)."""
    asked = []
    try:
        for worker in workers:
            worker.start_warm_up(device)
            asked.append(worker)
        torch.ones(1, device=device)
    except Exception as exc:  # only time is at stake: the pair will start them itself
        print(f"warm-up failed: {type(exc).__name__}: {exc}", flush=True)
    # Each worker's word is read whatever happened: unread, it would pass for the reply to the pair's first request.
    for worker in asked:
        try:
            worker.finish_warm_up()
        except Exception as exc:
            print(f"warm-up failed: {type(exc).__name__}: {exc}", flush=True)


def read_line_unbuffered(fd: int) -> str:
    """One line from a descriptor, a byte at a time: nothing after it is read ahead into our memory."""
    line = bytearray()
    while (byte := os.read(fd, 1)) and byte != b"\n":
        line += byte
    return line.decode()


class Reporter:
    """The judge's side of the runner's pipe: one message (common/protocol.py) a line, written whole."""

    def __init__(self, fd: int):
        self.fd = fd

    def send(self, message) -> None:
        data = protocol.encode(message).encode()
        while data:
            data = data[os.write(self.fd, data):]


if __name__ == "__main__":
    main()
