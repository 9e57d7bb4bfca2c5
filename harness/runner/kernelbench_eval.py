"""KernelBench's evaluator as a drop-in: `eval_kernel_against_ref` with its signature and its result's fields, the
pair judged by this harness (each side in a worker of its own, secret trial seeds, float64 truth, anti-cheat checks).
What differs from KernelBench's own: README, "KernelBench's evaluator as a drop-in"."""
from __future__ import annotations

import dataclasses
import statistics
from typing import Any, Optional

from harness.common.records import Result
from harness.runner import api

PRECISIONS = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}  # torch dtype name -> --precision
NOT_COMPILED = ("compile_error", "skipped", "harness_error")  # no ModelNew was built to run


@dataclasses.dataclass
class KernelExecResult:
    """KernelBench's result (its pydantic model's fields, times in ms as its timers give them)."""

    compiled: bool = False
    correctness: bool = False
    metadata: dict = dataclasses.field(default_factory=dict)
    runtime: float = -1.0
    runtime_stats: dict = dataclasses.field(default_factory=dict)
    ref_runtime: float = -1.0
    ref_runtime_stats: dict = dataclasses.field(default_factory=dict)

    def model_dump(self) -> dict:
        """As pydantic's model_dump (KernelBench's callers write it to JSON)."""
        return dataclasses.asdict(self)

    dict = model_dump  # pydantic v1's name


def eval_kernel_against_ref(original_model_src: str, custom_model_src: str, seed_num: int = 42,
                            num_correct_trials: int = 1, num_perf_trials: int = 10, measure_performance: bool = False,
                            timing_method: str = "cuda_event", verbose: bool = False, build_dir: Any = None,
                            device: Any = None, backend: str = "cuda", precision: Any = None,
                            check_for_excessive_speedup: bool = True,
                            excessive_speedup_threshold: float = 10) -> KernelExecResult:
    """KernelBench's call, judged here. seed_num seeds both models' construction as there; the trials, rounds,
    timing method, backend and build folder are this harness's own (num_correct_trials, num_perf_trials,
    timing_method, backend and build_dir are accepted and not used)."""
    result = api.evaluate(original_model_src, custom_model_src, device=device_name(device),
                          precision=precision_name(precision), settings={"init_seed": seed_num})
    if verbose:
        print(f"[harness] {result.status}: {result.error or ''} speedup {result.speedup}")
    return as_kernelbench(result, measure_performance, check_for_excessive_speedup and excessive_speedup_threshold)


def device_name(device: Any) -> str:
    """KernelBench's device (an index, a torch.device, a string or None) as this harness names it."""
    if device is None:
        return "auto"
    if isinstance(device, int):
        return f"cuda:{device}"
    return str(device)


def precision_name(precision: Any) -> Optional[str]:
    """A torch dtype (or its name) as --precision names it; None keeps the problem's own (float32)."""
    if precision is None:
        return None
    name = str(precision).removeprefix("torch.")
    if name not in PRECISIONS:
        raise ValueError(f"precision {precision} is not one of {', '.join(PRECISIONS)}")
    return PRECISIONS[name]


def as_kernelbench(result: Result, measure_performance: bool, excessive_above: float) -> KernelExecResult:
    """Our Result in KernelBench's fields; our status, flags, speedup and its CI in metadata."""
    status = str(result.status)
    metadata: dict[str, Any] = {"status": status, "flags": list(result.flags), "speedup": result.speedup,
                                "speedup_ci": [result.speedup_ci_low, result.speedup_ci_high], "tie": result.tie,
                                "hardware": result.gpu or "cpu", "device": result.device}
    kind = {"compile_error": "compilation_error", "runtime_error": "runtime_error", "timeout": "runtime_error",
            "crash": "runtime_error", "incorrect": "correctness_issue"}.get(status)
    if kind:
        metadata[kind] = result.error
        metadata[f"{kind}_name"] = status
    elif result.error:
        metadata["error"] = result.error
    out = KernelExecResult(compiled=status not in NOT_COMPILED, correctness=status == "correct", metadata=metadata)
    if measure_performance and out.correctness:
        out.runtime, out.runtime_stats = result.new_ms or -1.0, stats_of(result.new_samples_ms, result)
        out.ref_runtime, out.ref_runtime_stats = result.ref_ms or -1.0, stats_of(result.ref_samples_ms, result)
        if excessive_above and result.speedup and result.speedup > excessive_above:
            metadata["excessive_speedup"] = True
    return out


def stats_of(samples: list, result: Result) -> dict:
    """KernelBench's runtime_stats of one side's samples (ms)."""
    if not samples:
        return {}
    return {"mean": statistics.fmean(samples), "std": statistics.pstdev(samples), "min": min(samples),
            "max": max(samples), "num_trials": len(samples), "hardware": result.gpu or "cpu",
            "device": result.device}
