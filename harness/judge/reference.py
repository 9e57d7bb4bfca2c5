"""The reference side of a pair, in the judge: the problem's Model as constructed, its outputs, and their float64 truth.

Trusted code only: the candidate never runs here. A stateful problem (its forward changes state that its next output
depends on) is called in lockstep with the candidate; this module keeps the states that lockstep restores.
"""
from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, Callable, Optional

import torch
from torch.utils.flop_counter import FlopCounterMode  # imported ahead of the pair: it takes a while

from harness.common import check, protocol, problem_info, semantics
from harness.common import inputs as inputs_mod
from harness.common.config import Config, tolerance_for
from harness.common.load import load_module
from harness.common.problem_info import free_memory, gib
from harness.common.verdict import Status, Verdict
from harness.judge import footprint, roofline
from harness.judge.memory import PairMemory, release_cached_memory

OUT_OF_MEMORY = footprint.OUT_OF_MEMORY
# Messages that mean "this needs a GPU", not "this is broken", when running on the CPU.
NO_CUDA = re.compile(r"not compiled with CUDA|CUDA_HOME|no CUDA GPUs|NVIDIA driver|cuda_runtime|nvcc|"
                     r"Cannot access accelerator|CUDA (driver|runtime|support|is not available)", re.I)


class Reference:
    """The problem's model in the judge: loaded, built, called, and checked against float64."""

    def __init__(self, job: protocol.PairJob, cfg: Config, device: torch.device, dtype, note: Callable[[str], None],
                 phase: Callable):
        self.job, self.cfg, self.device, self.dtype = job, cfg, device, dtype
        self.note, self.phase = note, phase  # the pair's notes, and its phase timer (PairJudge)
        self.memory = PairMemory(device, "", job.overrides or {}, None)  # sized in load()
        self.problem: Any = None  # the problem's module
        self.problem_source = ""
        self.model: Any = None
        self.truth_model: Any = None  # the model in float64, made on first use
        self.init_args: list = []
        self.constructed_buffers: dict = {}
        self.stateful: Optional[bool] = None  # None until trial 1's call tells (check_stateful)
        self.constructed_state: dict = {}  # lockstep states: as constructed, before the last call, at timing's start
        self.call_state: dict = {}
        self.timing_state: dict = {}
        self.random_reference = False  # does the forward draw random numbers (seen on its first call)?
        self.flops = self.tf32_flops = self.bytes_moved = 0
        self.compute_dtype = torch.float32  # what the roofline's peaks are measured in

    def load(self) -> None:
        """Import the problem with --set overrides, and size it on the meta device."""
        try:
            # Read once: a candidate may rewrite the file on disk before the reference's timing worker starts.
            self.problem_source = source = Path(self.job.problem_path).read_text()
            self.problem = load_module(source, self.job.problem_path, "problem_module", self.job.overrides)
            for name in ("Model", "get_inputs", "get_init_inputs"):
                if not hasattr(self.problem, name):
                    raise inputs_mod.ProblemError(f"defines no {name}")
        except Exception as exc:
            raise self.failed("its file", exc) from None
        self.memory = PairMemory(self.device, source, self.job.overrides, problem_info.sizes(self.problem, self.dtype))

    def build(self) -> None:
        """Build Model under the init seed (after PairMemory.check: docs/memory.md)."""
        try:
            self.init_args = inputs_mod.init_inputs(self.problem)
            self.model = semantics.build_model(self.problem.Model, self.init_args, self.cfg.correctness.init_seed,
                                               self.device, self.cfg.mode, self.dtype)
            # Kept as constructed: a training-mode forward updates BatchNorm's running statistics.
            self.constructed_buffers = {name: b.detach().clone() for name, b in model_buffers(self.model)}
            self.constructed_state = semantics.model_state(self.model)
        except torch.cuda.OutOfMemoryError:
            raise  # whose memory it was is decided in PairJudge.run()
        except Exception as exc:
            raise self.failed("Model(...)", exc) from None

    def call(self, inputs: list, seed: int | None = None, count_flops: bool = False, watch_rng: bool = False):
        """The reference output (seeded first with a seed); watch_rng notes random draws, count_flops the FLOPs."""
        if self.stateful:
            self.call_state = semantics.model_state(self.model)  # what this call's float64 truth starts from
        try:
            with self.memory.measured_call():
                return self.forward(inputs, seed, count_flops, watch_rng)
        except torch.cuda.OutOfMemoryError:
            raise
        except Exception as exc:
            raise self.failed("its forward", exc) from None

    def forward(self, inputs: list, seed: int | None, count_flops: bool, watch_rng: bool):
        """call()'s forward itself (FlopCounterMode only on request: its first use costs seconds of CPU)."""
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
        """(float64 truth, its inputs' fingerprint), computed before the rest of the trial is on the device; or None."""
        inputs = self.make_inputs(trial, wide)
        drawn = check.input_fingerprint(inputs)
        inputs = check.as_float64(inputs)
        release_cached_memory(self.device)  # the float32 draw's blocks raise the judge's peak: docs/memory.md
        state = semantics.model_state(self.model) if self.stateful else None  # (the trial's call is to come)
        truth = self.truth(inputs, seed, upcast=False, state=state)
        del inputs
        release_cached_memory(self.device)
        return (truth, drawn) if truth is not None else None

    def truth(self, inputs: list, seed: int | None, upcast: bool = True, state: dict | None = None):
        """The float64 truth of these inputs (check.stored_truth); None where there is none (docs/judging.md)."""
        if not self.cfg.correctness.fp64_truth or self.random_reference:
            return None
        size = self.memory.sizes
        need = 2 * (size.inputs + size.outputs + size.weights) if size else 2 * inputs_mod.nbytes(inputs)
        free = free_memory(self.device)
        if need > self.cfg.correctness.fp64_memory_fraction * free:
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
                    inputs.clear()  # the caller's float64 inputs, freed before the output is narrowed
                return check.stored_truth(out, size.output_dtypes if size else None)
        except Exception as exc:  # a model that pins its own dtypes has no float64 form: no truth then
            if OUT_OF_MEMORY.search(str(exc)):
                self.note(f"no float64 truth: the device ran out of memory for it ({gib(need)} reckoned)")
            return None

    def check_stateful(self, before: dict, inputs: list, ref_out, seed: int) -> None:
        """After trial 1's call (`before`: the state fingerprint ahead of it): is the problem stateful (README)?"""
        if self.stateful is not None:
            return
        self.stateful = False
        if semantics.state_fingerprint(self.model) == before:
            return
        after = semantics.model_state(self.model)
        again = self.call(inputs, seed)
        semantics.restore_state(self.model, after)
        chunk = self.cfg.correctness.compare_chunk_elems
        differs = any(not check.compare(ref, new, **self.tolerance(ref), chunk=chunk).ok
                      for ref, new in zip(check.items(ref_out), check.items(again)))
        if differs:
            self.stateful = True
            self.note("stateful problem: its forward changes module state that its next output depends on; both "
                      "sides and the float64 truth were called in lockstep, and each timed call started from the "
                      "state after the correctness trials")

    def call_again(self, inputs: list, seed: int):
        """The call once more on trial 1's inputs (nondeterminism): a stateful model from its constructed state."""
        if not self.stateful:
            return self.call(inputs, seed)
        after = semantics.model_state(self.model)
        semantics.restore_state(self.model, self.constructed_state)
        try:
            return self.call(inputs, seed)
        finally:
            semantics.restore_state(self.model, after)

    def timed_call(self, inputs: list):
        """A timed round's output (a stateful model from its state at timing's start, as the candidate's)."""
        if self.stateful:
            semantics.restore_state(self.model, self.timing_state)
        return self.call(inputs)

    def start_timing(self) -> None:
        """Keep the state timing starts from (a stateful problem's timed calls each start there)."""
        if self.stateful:
            self.timing_state = semantics.model_state(self.model)

    def restart(self) -> None:
        """Back to the state as constructed (a second attempt of a stateful problem)."""
        if self.stateful:
            semantics.restore_state(self.model, self.constructed_state)

    def call_seed(self, trial: int) -> int:
        """The RNG seed both sides' calls of a trial start from (secret, as the trial's inputs)."""
        return inputs_mod.trial_seed(self.job.secret, self.job.problem + ":call", trial)

    def timing_seed(self) -> int:
        """The seed of this block's timing draws: secret, and its own per pair and per block (fresh workers' draws)."""
        return inputs_mod.trial_seed(self.job.secret, f"{self.job.problem}:{self.job.solution}:timing", self.job.block)

    def make_inputs(self, trial: int, wide: bool) -> list:
        """The trial's inputs from get_inputs() under its secret seed (wide: scaled by wide_input_scale)."""
        seed = inputs_mod.trial_seed(self.job.secret, self.job.problem, trial)
        try:
            return inputs_mod.make_inputs(self.problem, seed, self.device,
                                          self.cfg.correctness.wide_input_scale if wide else None, self.dtype)
        except torch.cuda.OutOfMemoryError:
            raise
        except Exception as exc:
            raise self.failed("get_inputs()", exc) from None

    def measure_sizes(self, inputs: list, ref_out) -> None:
        """Bytes a call moves and the dtype it computes in, for the roofline (from the first trial)."""
        assert self.model is not None
        self.bytes_moved = inputs_mod.nbytes(inputs) + param_bytes(self.model) + inputs_mod.nbytes(ref_out)
        self.compute_dtype = roofline.compute_dtype(inputs, model_tensors(self.model), check.items(ref_out))

    def tolerance(self, ref: torch.Tensor) -> dict:
        """{atol, rtol} for this problem and the reference output's dtype."""
        return tolerance_for(self.cfg, self.job.problem, str(ref.dtype).removeprefix("torch."))

    def failed(self, where: str, exc: Exception) -> Verdict:
        """The problem's own failure: harness_error (never the candidate's status), or skipped where it needs a GPU."""
        message = f"{type(exc).__name__}: {exc}"
        if self.device.type == "cpu" and NO_CUDA.search(message):
            return Verdict(Status.SKIPPED, f"the problem needs a CUDA GPU, device is cpu ({where}: {message})")
        return Verdict(Status.HARNESS_ERROR, f"the problem failed, not the candidate: {where} raised {message}")


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
