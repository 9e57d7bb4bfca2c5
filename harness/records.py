"""The result schema: statuses, flags and the one Result written per (problem, solution) pair."""
from __future__ import annotations

import dataclasses
import enum
import re
from dataclasses import dataclass, field
from typing import Any, Optional

SCHEMA_VERSION = 1


class Status(str, enum.Enum):
    """The verdict of one pair; exactly one per Result."""

    CORRECT = "correct"
    INCORRECT = "incorrect"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    CRASH = "crash"
    SKIPPED = "skipped"
    HARNESS_ERROR = "harness_error"  # the harness failed (its own exception, a judge that died): not the candidate


# Flags add what is suspicious without deciding the status.
FLAGS = (
    "input_mutated",
    "output_aliases_input",
    "reduced_precision",
    "no_custom_kernel",
    "timer_tampering",
    "excessive_speedup",
    "below_roofline",
    "nondeterministic",
    "wrong_timed_output",
    "noisy_timing",
    "throttled",
)


WORKER_STATUSES = ("compile_error", "runtime_error")


class Verdict(Exception):
    """Ends the judging of a pair early with a status (the run goes on)."""

    def __init__(self, status: Status, error: str, *flags: str):
        super().__init__(error)
        self.status, self.error, self.flags = status, error, list(flags)


@dataclass
class Result:
    """One line of results.jsonl; field names are part of the CLI contract."""

    problem: str
    solution: str
    status: str
    flags: list = field(default_factory=list)
    error: Optional[str] = None
    max_abs_err: Optional[float] = None
    max_rel_err: Optional[float] = None
    ref_ms: Optional[float] = None
    new_ms: Optional[float] = None
    speedup: Optional[float] = None
    speedup_ci_low: Optional[float] = None
    speedup_ci_high: Optional[float] = None
    gbps: Optional[float] = None
    tflops: Optional[float] = None
    sol_pct: Optional[float] = None
    compile_s: Optional[float] = None
    wall_s: Optional[float] = None
    device: Optional[str] = None
    gpu: Optional[str] = None
    # Provenance and evidence beyond the contract fields.
    key: Optional[str] = None
    problem_path: Optional[str] = None
    solution_path: Optional[str] = None
    ref_gbps: Optional[float] = None
    ref_tflops: Optional[float] = None
    ref_err_vs_fp64: Optional[float] = None
    new_err_vs_fp64: Optional[float] = None
    trials: Optional[int] = None
    tie: Optional[bool] = None
    ref_sol_pct: Optional[float] = None
    floor_ms: Optional[float] = None
    compiled_ms: Optional[float] = None
    compiled_error: Optional[str] = None
    cache: Optional[str] = None
    ref_timer: Optional[str] = None
    new_timer: Optional[str] = None
    ref_batch: Optional[int] = None  # calls per timed window (1, or k for graph and batched timing)
    new_batch: Optional[int] = None
    orphans_killed: Optional[int] = None  # processes a worker left running, killed when the pair ended
    timed_outputs_checked: Optional[int] = None  # timing rounds whose candidate output was checked
    judge_wall_ms: Optional[float] = None  # the judge's own median clock around one candidate timing request
    clocks: Optional[dict] = None
    timing_rounds: Optional[int] = None
    ref_samples_ms: list = field(default_factory=list)
    new_samples_ms: list = field(default_factory=list)
    ref_wall_ms: list = field(default_factory=list)
    new_wall_ms: list = field(default_factory=list)
    peak_mem_mb: Optional[dict] = None
    precision: Optional[str] = None  # fp32, fp16 or bf16 (--precision)
    backend: Optional[str] = None  # triton, cuda, cpp or torch: from the source, and the runtime trace
    phases_s: Optional[dict] = None  # wall seconds of each judge phase, where the pair's time went
    # Provenance per record, so that tables rebuild from results.jsonl alone.
    torch_version: Optional[str] = None
    cuda_version: Optional[str] = None
    harness: Optional[str] = None  # git commit, or sha:<hash of harness/*.py> without a git checkout
    finished_at: Optional[str] = None  # UTC, ISO 8601
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form, with flags sorted for stable output."""
        data = dataclasses.asdict(self)
        data["flags"] = sorted(set(self.flags))
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Result":
        """Build a Result from a JSON object, ignoring fields this version does not know."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def failure(problem: str, solution: str, status: Status, error: str, **extra: Any) -> Result:
    """A Result for a pair that did not get as far as a verdict on its numbers."""
    return Result(problem=problem, solution=solution, status=status.value, error=one_line(error), **extra)


def one_line(text: Optional[str], limit: int = 500) -> Optional[str]:
    """Squash a message to a single bounded line for tables and JSONL."""
    if text is None:
        return None
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def first_compiler_error(log: str) -> str:
    """': file:line: error: ...' for the first compiler error in a build log, or ''."""
    match = (re.search(r"([^\s/]+:\d+(?::\d+)?:\s*(?:fatal )?error[: ].*)", log)
             or re.search(r"((?:\S+: )?error: .*)", log))
    return f": {match.group(1).strip()}" if match else ""
