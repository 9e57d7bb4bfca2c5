"""What the phases of a pair found, typed: the correctness checks' report and the timing phase's, each written into
the pair's Result by one function (into_result) however the phase ended."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional

from harness.common.records import Result


@dataclass(slots=True)
class CorrectnessReport:
    """What the correctness checks found (the trials', and the timed rounds' outputs')."""

    trials: Optional[int] = None  # trials run (None: not all of them)
    flags: list = field(default_factory=list)
    max_abs_err: Optional[float] = None
    max_rel_err: Optional[float] = None
    ref_err_vs_fp64: Optional[float] = None  # in tolerances
    new_err_vs_fp64: Optional[float] = None
    problem_findings: list = field(default_factory=list)  # the lint's, on the reference's outputs


@dataclass(slots=True)
class TimingReport:
    """What the timing phase measured: both sides' methods, samples and statistics, the roofline, its flags."""

    flags: list = field(default_factory=list)
    ref_timer: Optional[str] = None  # the methods and batches both sides agreed on (timing_setup)
    ref_batch: Optional[int] = None
    new_timer: Optional[str] = None
    new_batch: Optional[int] = None
    flops: Optional[int] = None
    tf32_flops: Optional[int] = None
    backend: Optional[str] = None
    ref_ms: Optional[float] = None  # the statistics (stats.speedup_with_ci, widened by the resolution)
    new_ms: Optional[float] = None
    speedup: Optional[float] = None
    speedup_ci_low: Optional[float] = None
    speedup_ci_high: Optional[float] = None
    resolution_pct: Optional[float] = None
    tie: Optional[bool] = None
    cache: Optional[str] = None
    ref_samples_ms: list = field(default_factory=list)
    new_samples_ms: list = field(default_factory=list)
    ref_wall_ms: list = field(default_factory=list)
    new_wall_ms: list = field(default_factory=list)
    timing_rounds: Optional[int] = None
    rounds_discarded: Optional[int] = None
    round_order: Optional[str] = None
    timed_outputs_checked: Optional[int] = None
    judge_wall_ms: Optional[float] = None
    gpu_wait_ms: Optional[float] = None
    clocks: Optional[dict] = None
    gbps: Optional[float] = None
    ref_gbps: Optional[float] = None
    tflops: Optional[float] = None
    ref_tflops: Optional[float] = None
    floor_ms: Optional[float] = None
    sol_pct: Optional[float] = None
    ref_sol_pct: Optional[float] = None
    compiled_ms: Optional[float] = None
    compiled_error: Optional[str] = None


def into_result(result: Result, *reports) -> None:
    """Each report's findings into the Result: what it set (not its defaults), and its flags not there yet. Called
    again as a phase goes on, it adds only what is new."""
    for report in reports:
        for spec in dataclasses.fields(report):
            value = getattr(report, spec.name)
            if spec.name == "flags":
                result.flags += [f for f in value if f not in result.flags]
            elif value != (spec.default_factory() if spec.default_factory is not dataclasses.MISSING else spec.default):
                setattr(result, spec.name, value)
