"""The trusted process of one pair: reference outputs, the worker, comparisons, guards and statistics.

It imports the problem, never the candidate. Started by the runner (judge_processes.py), or forked from the judge
factory, it reads the runner's messages on stdin (the run's config, then its pair's job) and writes its stages and its
Result on the runner's pipe (main(); the messages: judge_protocol.py).
"""
from __future__ import annotations

import contextlib
import copy
import math
import os
import re
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Optional

import torch
from torch.utils.flop_counter import FlopCounterMode  # imported ahead of the pair: it takes a while

from harness.common import channel, check, handover, protocol, problem_info, procs, semantics, stopping
from harness.common import inputs as inputs_mod
from harness.judge import footprint, roofline
from harness.worker import timing
from harness.common.extensions import build_failure, candidate_build_env
from harness.common.config import Config, PRECISIONS, tolerance_for
from harness.common.devices import is_gpu, torch_device
from harness.judge.memory import PairMemory, dump_memory_history, record_memory_history, release_cached_memory
from harness.judge.timing import PairTiming
from harness.judge.trials import Trials
from harness.common.problem_info import free_memory, gib
from harness.common.load import load_module
from harness.common.records import Result, failure, one_line
from harness.common.verdict import PASSING_FLAGS, Status, Verdict
from harness.common.procs import adopt_orphans, children, kill_orphans, make_undumpable, my_children
from harness.judge.sandbox import Sandbox, WorkerFailure

OUT_OF_MEMORY = footprint.OUT_OF_MEMORY
# Messages that mean "this needs a GPU", not "this is broken", when running on the CPU.
NO_CUDA = re.compile(r"not compiled with CUDA|CUDA_HOME|no CUDA GPUs|NVIDIA driver|cuda_runtime|nvcc|"
                     r"Cannot access accelerator|CUDA (driver|runtime|support|is not available)", re.I)


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
        self.sandbox, self.ref_sandbox = workers  # the candidate's worker; the reference's timing worker
        self.helpers = helpers  # our own children that are no orphans (torch's shared-memory manager)
        # The reference's worker's scheduling before candidate code ran: PairTiming checks that it changes only by our
        # hand.
        self.ref_schedule: Optional[procs.Schedule] = None
        self.truth_model = None
        self.memory = PairMemory(self.device, "", job.overrides or {}, None)  # sized in load_problem
        self.on_reference_side = False  # inside reference_side(): a worker's failure there is the reference's
        self.gated = False  # the runner says when to time (judge_protocol.Go): judges ahead may be starting CUDA
        self.constructed_buffers: dict = {}
        # A stateful problem (semantics.state_tensors; found at trial 1) is judged in lockstep: the state as
        # constructed, before the last reference call, and at the start of timing, for both sides' restores.
        self.stateful: Optional[bool] = None  # None until trial 1's reference call tells
        self.constructed_state: dict = {}
        self.call_state: dict = {}
        self.timing_state: dict = {}
        self.worker_threads = torch.get_num_threads()  # what the workers compute with (main() sets it)
        self.random_reference = False  # does the reference draw random numbers (seen on its first call)?
        self.reference_worker_called = False  # has the reference's timing worker made its first call (trial 1)?
        self.trials = Trials(self)
        self.flops = self.tf32_flops = self.bytes_moved = 0
        self.compute_dtype = torch.float32  # what the roofline's peaks are measured in

    # -- the reference side ------------------------------------------------------------------------

    def load_problem(self) -> None:
        """Import the problem with --set overrides, and size it on the meta device."""
        try:
            # Read once: a candidate may rewrite the file on disk before the reference's timing worker starts.
            self.problem_source = source = Path(self.job.problem_path).read_text()
            self.problem = load_module(source, self.job.problem_path, "problem_module", self.job.overrides)
            for name in ("Model", "get_inputs", "get_init_inputs"):
                if not hasattr(self.problem, name):
                    raise inputs_mod.ProblemError(f"defines no {name}")
        except Exception as exc:
            raise self.problem_failed("its file", exc) from None
        # Sized on the meta device (None: not sizable there).
        sizes = problem_info.sizes(self.problem, self.dtype)
        self.memory = PairMemory(self.device, source, self.job.overrides, sizes)

    def build_reference(self) -> None:
        """Build Model under the init seed (after the pre-flight check, PairMemory.check: a model of many GiB of weights
        took 22 s to build on the H100 before a pair it could not hold was skipped)."""
        try:
            self.init_args = inputs_mod.init_inputs(self.problem)
            self.model = semantics.build_model(self.problem.Model, self.init_args, self.cfg.init_seed, self.device,
                                               self.cfg.mode, self.dtype)
            # Buffers as constructed: a training-mode forward updates BatchNorm's running statistics, which are no
            # weights to hand a second attempt.
            self.constructed_buffers = {name: b.detach().clone() for name, b in model_buffers(self.model)}
            self.constructed_state = semantics.model_state(self.model)
        except torch.cuda.OutOfMemoryError:
            raise  # whose memory it was is decided in run()
        except Exception as exc:
            raise self.problem_failed("Model(...)", exc) from None

    def reference(self, inputs: list, seed: int | None = None, count_flops: bool = False, watch_rng: bool = False):
        """The reference output (semantics.call: with a seed, the RNG seeded first). watch_rng: note whether the call
        drew random numbers (random_reference). FLOPs counted on request: FlopCounterMode's first use imports
        torch._dynamo, seconds of CPU, so only pairs that reach timing, and the run's first for each problem, pay."""
        if self.stateful:
            self.call_state = semantics.model_state(self.model)  # what this call's float64 truth starts from
        try:
            with self.memory.measured_call():
                return self.reference_call(inputs, seed, count_flops, watch_rng)
        except torch.cuda.OutOfMemoryError:
            raise  # whose memory it was is decided in run()
        except Exception as exc:
            raise self.problem_failed("its forward", exc) from None

    def reference_call(self, inputs: list, seed: int | None, count_flops: bool, watch_rng: bool):
        """reference()'s call itself."""
        if watch_rng:
            with semantics.RandomDraws(self.device, seed) as draws:
                out = semantics.call(self.model, inputs)
            self.random_reference = draws.drawn
            return out
        if not count_flops:
            return semantics.call(self.model, inputs, seed)
        with FlopCounterMode(display=False) as counter:
            out = semantics.call(self.model, inputs, seed)
        self.flops = counter.get_total_flops()
        self.tf32_flops = roofline.tf32_flops(counter.get_flop_counts().get("Global", {}))
        return out

    def truth_first(self, trial: int, wide: bool, seed: int | None):
        """The trial's float64 truth (the reference model in float64, check.stored_truth) and a fingerprint of the
        inputs it was computed from, computed before anything else of the trial is on the device: the inputs are
        drawn, upcast and dropped, and drawn again afterwards (footprint.py: the float64 forward needs the room).
        None where there is no truth: see truth()."""
        inputs = self.make_inputs(trial, wide)
        drawn = check.input_fingerprint(inputs)
        inputs = check.as_float64(inputs)
        release_cached_memory(self.device)  # the float32 draw's blocks: cached through the float64 forward, they made
        state = semantics.model_state(self.model) if self.stateful else None  # (the trial's reference call is to come)
        # the judge's peak 2.5x (inputs + output) on the H100, not 2x
        truth = self.truth(inputs, seed, upcast=False, state=state)
        del inputs
        release_cached_memory(self.device)  # the float64 blocks back: the trial's tensors are smaller
        return (truth, drawn) if truth is not None else None

    def truth(self, inputs: list, seed: int | None, upcast: bool = True, state: dict | None = None):
        """The float64 ground truth of these inputs, as check.stored_truth keeps it (inputs already float64 unless
        upcast; then the list is emptied once the float64 forward is done). None where the reference draws random
        numbers (float64 draws differ from float32 ones), the model has no float64 form, or it does not fit in the
        device's free memory (the result's notes say so, once). A stateful problem's truth starts from `state`, else
        from the state before the last reference call."""
        if not self.cfg.fp64_truth or self.random_reference:
            return None
        size = self.memory.sizes
        need = 2 * (size.inputs + size.outputs + size.weights) if size else 2 * inputs_mod.nbytes(inputs)
        free = free_memory(self.device)
        if need > self.cfg.fp64_memory_fraction * free:
            self.note(f"no float64 truth: it needs about {gib(need)}, {gib(free)} of the device was free")
            return None
        try:
            if self.truth_model is None:
                self.truth_model = copy.deepcopy(self.model).double()
            if self.stateful:
                semantics.restore_state(self.truth_model, self.call_state if state is None else state, torch.float64)
            with self.phase("correctness.truth"):
                inputs64 = check.as_float64(inputs) if upcast else inputs
                out = semantics.call(self.truth_model, inputs64, seed)
                del inputs64
                if not upcast:
                    inputs.clear()  # the caller's float64 inputs, freed before the output is narrowed (footprint.py)
                return check.stored_truth(out, size.output_dtypes if size else None)
        except Exception as exc:  # a model that pins its own dtypes has no float64 form: no truth then
            if OUT_OF_MEMORY.search(str(exc)):
                self.note(f"no float64 truth: the device ran out of memory for it ({gib(need)} reckoned)")
            return None

    def check_stateful(self, before: dict, inputs: list, ref_out, seed: int) -> None:
        """After trial 1's reference call (its state before it: `before`, a semantics.state_fingerprint): a problem
        whose
        forward changed its state and whose next call on the same inputs then gives another output is stateful: from
        here on both sides are judged in lockstep (README: How a pair is judged). The extra call's state change is
        undone."""
        if self.stateful is not None:
            return
        self.stateful = False
        if semantics.state_fingerprint(self.model) == before:
            return
        after = semantics.model_state(self.model)
        again = self.reference(inputs, seed)
        semantics.restore_state(self.model, after)
        differs = any(not check.compare(ref, new, **self.tolerance(ref), chunk=self.cfg.compare_chunk_elems).ok
                      for ref, new in zip(check.items(ref_out), check.items(again)))
        if differs:
            self.stateful = self.result.stateful = True
            self.note("stateful problem: its forward changes module state that its next output depends on; both "
                      "sides and the float64 truth were called in lockstep, and each timed call started from the "
                      "state after the correctness trials")

    def reference_again(self, inputs: list, seed: int):
        """The reference once more on trial 1's inputs (the nondeterminism check): a stateful model from its state
        before trial 1 (as constructed), and left as it was after trial 1."""
        if not self.stateful:
            return self.reference(inputs, seed)
        after = semantics.model_state(self.model)
        semantics.restore_state(self.model, self.constructed_state)
        try:
            return self.reference(inputs, seed)
        finally:
            semantics.restore_state(self.model, after)

    def timed_reference(self, inputs: list):
        """The reference's output for a timed round's inputs: a stateful model from its state at the start of timing,
        as each of the candidate's timed calls starts (Worker.op_set_timing_inputs)."""
        if self.stateful:
            semantics.restore_state(self.model, self.timing_state)
        return self.reference(inputs)

    def restart_state(self) -> None:
        """A stateful problem's second attempt starts where the first did: both models in their state as constructed
        (the candidate's as before its first call)."""
        if self.stateful:
            semantics.restore_state(self.model, self.constructed_state)
            self.expect_ok(self.sandbox.request("restore_state", self.cfg.timeout))

    def note(self, text: str) -> None:
        """A note for the result, once."""
        if text not in self.result.notes:
            self.result.notes.append(text)

    def problem_failed(self, where: str, exc: Exception) -> Verdict:
        """The verdict when the problem itself fails (its file, Model(...), get_inputs() or its forward): the run cannot
        judge the candidate (harness_error, never the candidate's status), or, on the CPU, it needs a GPU (skipped)."""
        message = f"{type(exc).__name__}: {exc}"
        if self.device.type == "cpu" and NO_CUDA.search(message):
            return Verdict(Status.SKIPPED, f"the problem needs a CUDA GPU, device is cpu ({where}: {message})")
        return Verdict(Status.HARNESS_ERROR, f"the problem failed, not the candidate: {where} raised {message}")

    # -- the candidate side ------------------------------------------------------------------------

    def import_both(self) -> None:
        """Both workers greeted and their code imported at once: the candidate's (its extension builds run now: the
        stage `build`) and the problem's. A candidate's failure is its verdict; the reference's is the harness's."""
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
                          problem=[self.problem_source, self.job.problem_path])
        with self.reference_side():
            self.ref_sandbox.send("import", path=self.job.problem_path, source=self.problem_source,
                                  overrides=self.job.overrides, class_name="Model", module_name="reference_module")
        self.expect_ok(self.sandbox.receive("import", self.cfg.compile_timeout), self.sandbox)
        with self.reference_side():
            self.expect_ok(self.ref_sandbox.receive("import", self.cfg.compile_timeout), self.ref_sandbox)

    def construct_both(self) -> None:
        """Both models built, one at a time, the reference's first (it is timed in its worker later), the weights
        copied to it just before, so that the candidate never runs while that copy (a shared-memory file on the CPU,
        which any process of this user can open) is still to be read."""
        with self.reference_side():
            self.construct(self.ref_sandbox)
        reply = self.construct(self.sandbox)
        self.result.compile_s = round(float(reply["build_s"]), 3)
        release_cached_memory(self.device, outboxes=self.outboxes())  # the weights' copy's pool, kept else in trial 1

    def construct(self, sandbox: Sandbox) -> dict:
        """Build one worker's model as the judge built its own (semantics.build_model); the reply's payload. The
        candidate keeps the weights its __init__ made; the reference's worker gets a copy of ours, so that it times
        exactly the model the judge checks against."""
        state = None
        if sandbox is self.ref_sandbox:
            assert sandbox.outbox is not None  # made when it was greeted
            state = sandbox.outbox.state_copy(self.model.state_dict())
        self.hand_over()
        # A candidate may build its extension in __init__: construction gets the build's time limit too.
        reply = sandbox.request("construct", self.cfg.timeout + self.cfg.compile_timeout, init_args=self.init_args,
                                init_seed=self.cfg.init_seed, state_dict=state, mode=self.cfg.mode,
                                dtype=None if self.dtype is None else str(self.dtype).removeprefix("torch."))
        return self.expect_ok(reply, sandbox)

    def adopt_reference_weights(self) -> bool:
        """The second attempt's start: the reference's weights copied over the candidate's own where names and shapes
        match; True when that changed any of them (else a second attempt would judge the same model again)."""
        constructed = {name: self.constructed_buffers.get(name, value)
                       for name, value in self.model.state_dict().items()}
        state = self.sandbox.outbox.state_copy(constructed)
        del constructed
        self.hand_over()
        reply = self.expect_ok(self.sandbox.request("adopt_weights", self.cfg.timeout, state_dict=state))
        del state
        release_cached_memory(self.device, outboxes=self.outboxes())
        return isinstance(reply, dict) and isinstance(reply.get("changed_tensors"),
                                                      int) and reply["changed_tensors"] > 0

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
        """One candidate call on the shared inputs, the RNG seeded as for the reference's call; its reply,
        structure-checked. For a stateful problem the worker keeps its state as before its first call, and with
        `restore` starts this call from it."""
        sizes = poison_sizes(ref_out)
        # Our cached blocks (the reference call's temporaries and workspaces, the checks') back: the candidate's library
        # chooses its algorithm by the room it finds (see reference_worker_first_call).
        release_cached_memory(self.device)
        self.hand_over()
        if restore and self.stateful:
            self.expect_ok(self.sandbox.request("restore_state", self.cfg.timeout))
        reply = self.expect_ok(self.sandbox.request("run", self.cfg.timeout, inputs=shared, poison_sizes=sizes,
                                                    seed=seed, keep_state=bool(self.stateful)))
        problem = check.structure_problem(ref_out, reply)
        if problem:
            raise Verdict(Status.INCORRECT, problem)
        return reply

    def release_trial(self) -> None:
        """After a trial: the candidate's worker lets go of that call's inputs and outputs (else it holds them until
        its next call, beside the next trial's), and this process hands its cached GPU blocks back."""
        self.expect_ok(self.sandbox.request("release_outputs", self.cfg.timeout))
        release_cached_memory(self.device, outboxes=self.outboxes())

    def reference_worker_first_call(self, inputs: list, ref_out, seed: int) -> None:
        """The reference's timing worker's first call, on trial 1's inputs, just before the candidate's first call and
        with the same beside it: here the trial's inputs, reference output and truth and that side's copy of the
        inputs; the other worker holding its model alone (the candidate's has not run; the reference's is emptied
        before the candidate's call). A library that chooses its algorithm on a call's first use and keeps it (cuDNN's
        convolutions take the first whose workspace fits, and choose again only when it no longer does) then chooses
        for both sides with the same room. Before, the reference's worker chose at its timing warm-up, with more room
        than the candidate had in correctness: on an H200 capped to 24 GiB, KernelBench's 57_conv_transposed_2D against
        itself came out 0.191, the two sides running different cuDNN kernels. Its freed memory is poisoned as the
        candidate's is before its call: on an H100, KernelBench's 27_RegNet against itself leaned 1.2% (0.987 median of
        10 copies) while only the candidate's first call was poisoned, and tied (1.000) with neither side's, the cause
        being in that first call alone (poisoned before every call but the first: 0.997)."""
        if self.reference_worker_called:
            return
        # What the candidate's __init__ left cached (a warm-up call, say) back first: the candidate's worker is yet to
        # run.
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
        """Both workers', then this process's cached GPU memory handed back (the GPU was full). (A candidate that keeps
        its cache leaves the judge short: blame_for_memory then decides whose the shortage was.)"""
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
        """The reference's worker runs trusted code: its failure is the harness's (harness_error), unless it ran
        out of GPU memory that the candidate's worker was holding (then it is the candidate's runtime_error)."""
        self.on_reference_side = True
        try:
            yield
        except (Verdict, WorkerFailure) as exc:
            message = f"the reference's timing worker failed: {exc}"
            raise self.blame_for_memory(message) or Verdict(Status.HARNESS_ERROR, message) from None
        finally:
            self.on_reference_side = False

    def blame_for_memory(self, message: str) -> Verdict | None:
        """Whose an out-of-memory of the judge or the reference's worker was (PairMemory.blame); None when the message
        is no GPU out-of-memory."""
        return self.memory.blame(message, self.sandbox.proc.pid, self.ref_sandbox.proc.pid)

    # -- correctness (judge_trials.Trials) --------------------------------------------------------

    def call_seed(self, trial: int) -> int:
        """The RNG seed both sides' calls of a trial start from (secret, as the trial's inputs)."""
        return inputs_mod.trial_seed(self.job.secret, self.job.problem + ":call", trial)

    def timing_seed(self) -> int:
        """The seed of this block's timing draws (round order, pads, checked rounds): secret, and its own per pair and
        per block, so that a confirmation block's fresh workers are placed by draws of their own, not the first's."""
        return inputs_mod.trial_seed(self.job.secret, f"{self.job.problem}:{self.job.solution}:timing",
                                     self.block)

    def make_inputs(self, trial: int, wide: bool) -> list:
        seed = inputs_mod.trial_seed(self.job.secret, self.job.problem, trial)
        try:
            return inputs_mod.make_inputs(self.problem, seed, self.device,
                                          self.cfg.wide_input_scale if wide else None, self.dtype)
        except torch.cuda.OutOfMemoryError:
            raise  # whose memory it was is decided in run()
        except Exception as exc:
            raise self.problem_failed("get_inputs()", exc) from None

    def measure_sizes(self, inputs: list, ref_out) -> None:
        """Bytes a call moves and the dtype it computes in, for the roofline (from the first trial)."""
        self.bytes_moved = inputs_mod.nbytes(inputs) + param_bytes(self.model) + inputs_mod.nbytes(ref_out)
        self.compute_dtype = roofline.compute_dtype(inputs, model_tensors(self.model), check.items(ref_out))

    def tolerance(self, ref: torch.Tensor) -> dict:
        """{atol, rtol} for this problem and the reference output's dtype."""
        return tolerance_for(self.cfg, self.job.problem, str(ref.dtype).removeprefix("torch."))

    # -- the whole pair ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def phase(self, name: str):
        """Record the wall seconds of one phase of the pair in `phases_s` (for throughput work); a top-level
        phase is a stage of the pair, announced to the runner (which holds each stage to a deadline)."""
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
                self.load_problem()
                self.memory.check(self.report)
                self.build_reference()
            with self.phase("build"):
                self.import_both()
            with self.phase("workers"):
                self.construct_both()
            with self.phase("correctness"):
                self.trials.run()
            if self.stateful:
                self.timing_state = semantics.model_state(self.model)
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
        infos: dict = {}
        with self.phase("finish.workers"):  # both at once: each takes ~0.1 s to end on the H100
            closing = threading.Thread(target=lambda: infos.update(reference=self.ref_sandbox.close()))
            if self.ref_sandbox is not None:
                closing.start()
            if self.sandbox is not None:
                infos["candidate"] = self.sandbox.close()
                Path(self.job.log_path).write_text(self.sandbox.log.text())
            if self.ref_sandbox is not None:
                closing.join()
        with self.phase("finish.orphans"):
            self.result.orphans_killed = kill_orphans(self.helpers) or None  # processes the workers left behind
        dump_memory_history(self.device, f"{self.job.problem}__{self.job.solution}")
        # (peak_reserved: 0 on the CPU)
        peak_mb = max(self.memory.peak_reserved / 2**20, timing.peak_memory_mb(self.device))
        self.result.peak_mem_mb = {"judge": round(peak_mb, 1),
                                   "worker": reported_peak(infos.get("candidate")),
                                   "reference_worker": reported_peak(infos.get("reference"))}
        if self.device.type == "cuda":
            self.result.worker_ooms = {"worker": reported_count(infos.get("candidate"), "ooms"),
                                       "reference_worker": reported_count(infos.get("reference"), "ooms")}


def confirmation_config(cfg: Config) -> Config:
    """A confirmation block's settings (harness.runner.blocks): it re-times a pair judged correct on fresh workers, so
    one
    trial checks them, and half the rounds and seconds give a fresh draw of the processes' offset (its CI joins the
    hull: a wider one never makes a claim)."""
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


def model_tensors(model) -> list:
    """A model's parameters and buffers (none for a model that is not an nn.Module)."""
    if not isinstance(model, torch.nn.Module):
        return []
    return list(model.parameters()) + list(model.buffers())


def model_buffers(model) -> list:
    """(name, buffer) of a model's buffers (none for a model that is not an nn.Module)."""
    return list(model.named_buffers()) if isinstance(model, torch.nn.Module) else []


def param_bytes(model) -> int:
    """Bytes of a model's parameters and buffers (the weights a kernel must read)."""
    return sum(t.numel() * t.element_size() for t in model_tensors(model))


def main() -> None:
    """Judge the pair whose job arrives on stdin; report its stages and its Result, as JSON lines, on the
    original stdout (the runner's pipe).

    Nothing of the job touches the disk (the per-run secret that seeds the trials is in it), this
    process is made non-dumpable (other processes of this user cannot read its memory or open its
    file descriptors through /proc), and the Result leaves through a descriptor no worker inherits.
    """
    make_undumpable()
    adopt_orphans()
    stopping.ignore_interrupts()  # a Ctrl-C is the runner's to act on: it kills us
    report = Reporter(os.dup(1))  # no worker keeps this descriptor (sandbox.become_worker)
    os.dup2(2, 1)  # anything printed from here on goes to the log, never into the protocol
    # The runner starts judges ahead of their pairs: the first line gives the run's config, and both
    # workers start while this process waits for its pair on the second line. They are forked from us
    # before the job is read (nothing of it may be in the memory they copy) and before any device is touched.
    start = protocol.from_runner(read_line_unbuffered(0))
    if not isinstance(start, protocol.Start):
        raise SystemExit(f"the runner's first line must be its Start, got {start}")
    config, warm_device = start.config, start.warm_device
    start_up = StartUp(start.started_at)  # where a judge's start-up went (judge_start.* phases)
    # started ahead: before the workers fork (ms in a judge forked from the judge factory, which did it)
    if warm_device:
        ready_flop_counter()
        start_up.mark("flops")
    workers, helpers = start_workers(config)
    start_up.mark("workers")
    if warm_device:  # CUDA contexts and the profiler's (~0.3 s, seen by another pair's GPU probe) when the runner
        report.send(protocol.ReadyToWarm())  # says no pair on this GPU is timed
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
    # The candidate's worker first (confined): the reference's, forked second, has a copy of the first one's channel.
    workers = tuple(Sandbox({}, config.output_limit_bytes, config.kill_grace_s, confined=side == 0)
                    for side in range(2))
    # torch's shared-memory manager (CPU tensors cross to workers through it) is our child too: started
    # before any worker runs candidate code, it is known as ours and spared when orphans are killed.
    torch.empty(1).share_memory_()
    helpers = frozenset(my_children()) - {w.proc.pid for w in workers}
    ours = helpers | {w.proc.pid for w in workers}
    # Any other child of ours is an orphan a candidate's process left (we are its subreaper): the candidate's.
    workers[0].strays = lambda: [pid for pid in children(os.getpid()) if pid not in ours]
    return workers, helpers


def ready_flop_counter() -> None:
    """FlopCounterMode's first use: seconds of imports (torch._dynamo), CPU only. It also readies the profiler, whose
    first use in a worker forked after it then takes ms, not seconds (bench/warmup_probe.py)."""
    with FlopCounterMode(display=False):
        torch.ones(2).sigmoid()


class StartUp:
    """The wall seconds of a judge's start-up steps, from the runner's start of the process (judge_start.* phases:
    import is Python's and torch's, held the wait for the runner's leave to warm up). A judge that is late for its
    pair (judge_start) shows here why."""

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
    """Start CUDA here and CUDA and the profiler in both workers (all at once, ~0.3 s on the H100): the runner
    asks for it while no pair is timed on this GPU, since these start-ups show in another pair's windows."""
    asked = []
    try:
        for worker in workers:
            worker.start_warm_up(device)
            asked.append(worker)
        torch.ones(1, device=device)
    except Exception as exc:  # only time is at stake: the pair will start them itself
        print(f"warm-up failed: {type(exc).__name__}: {exc}", flush=True)
    # Each worker's word is read whatever happened here: left unread, it would be taken for the reply to the pair's
    # first request (on the H100 this judge's CUDA start ran out of memory while another pair held the GPU's memory,
    # and the candidate's first run then "replied" with its warm-up word: a harness_error).
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
    """The judge's side of the runner's pipe: one message (judge_protocol) a line, written whole."""

    def __init__(self, fd: int):
        self.fd = fd

    def send(self, message) -> None:
        data = protocol.encode(message).encode()
        while data:
            data = data[os.write(self.fd, data):]


if __name__ == "__main__":
    main()
