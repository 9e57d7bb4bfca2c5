"""The result schema: the one Result written per (problem, solution) pair, and its version (statuses and flags:
harness.verdict)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from harness import store
from harness.errors import UserError
from harness.verdict import Status

SCHEMA_VERSION = 1  # of results.jsonl records and leaderboard rows; readers refuse versions they do not know


class SchemaError(UserError):
    """Results written in a schema version this harness does not read."""


def check_schema_version(version: Any, where: str) -> None:
    """Refuse a record of a schema version other than ours (a newer harness wrote it, or it is no record)."""
    if version != SCHEMA_VERSION:
        raise SchemaError(f"{where}: schema_version {version!r}; this harness reads version {SCHEMA_VERSION} "
                          f"(results written by another version of the harness: read them with that version)")


@dataclass
class Result:
    """One line of results.jsonl; field names are part of the CLI contract."""

    problem: str
    solution: str
    status: Status
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
    flops: Optional[int] = None  # FLOPs of one reference call (FlopCounterMode), for tflops and the roofline
    compiled_ms: Optional[float] = None
    compiled_error: Optional[str] = None
    cache: Optional[str] = None
    ref_timer: Optional[str] = None
    new_timer: Optional[str] = None
    ref_batch: Optional[int] = None  # calls a sample times: k windows of one call (cuda_event), or k calls a window
    new_batch: Optional[int] = None
    orphans_killed: Optional[int] = None  # processes a worker left running, killed when the pair ended
    timed_outputs_checked: Optional[int] = None  # timing rounds whose candidate output was checked
    judge_wall_ms: Optional[float] = None  # the judge's own median clock around one candidate timing request
    rounds_discarded: Optional[int] = None  # timing rounds dropped: another process used the GPU around a window
    gpu_wait_ms: Optional[float] = None  # time spent before windows waiting for other processes' GPU work to drain
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
    overrides: Optional[dict] = None  # the module constants set for this pair (--set, a manifest entry's set)
    mode: Optional[str] = None  # the modules' mode: `constructed` (KernelBench's: training unless __init__ says) or eval
    problem_findings: list = field(default_factory=list)  # what makes the problem degenerate (the lint's findings)
    notes: list = field(default_factory=list)  # how the pair was judged where it differs from the usual
    # Provenance per record, so that tables rebuild from results.jsonl alone.
    torch_version: Optional[str] = None
    cuda_version: Optional[str] = None
    harness: Optional[str] = None  # git commit, or sha:<hash of harness/*.py> without a git checkout
    finished_at: Optional[str] = None  # UTC, ISO 8601
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self):
        self.status = Status(self.status)  # a str from JSON; an unknown one is a ValueError

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form, with flags sorted for stable output."""
        data = dataclasses.asdict(self)
        data["status"], data["flags"] = self.status.value, sorted(set(self.flags))
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Result":
        """Build a Result from a JSON object of this schema version, ignoring fields this version does not know."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def read_results(path: Path) -> tuple[list[Result], int]:
    """A results.jsonl as Results (every record of it, in order) and the count of torn or unreadable lines;
    a record of another schema version, or with a status this version does not know, is a SchemaError."""
    records, torn = store.read_jsonl(path)
    results = []
    for number, record in enumerate(records, 1):
        check_schema_version(record.get("schema_version"), f"{path}, record {number}")
        try:
            results.append(Result.from_dict(record))
        except (TypeError, ValueError) as exc:
            raise SchemaError(f"{path}, record {number}: not a result of this schema ({exc})") from None
    return results, torn


def failure(problem: str, solution: str, status: Status, error: str, **extra: Any) -> Result:
    """A Result for a pair that did not get as far as a verdict on its numbers."""
    return Result(problem=problem, solution=solution, status=status, error=one_line(error), **extra)


def one_line(text: Optional[str], limit: int = 500) -> Optional[str]:
    """Squash a message to a single bounded line for tables and JSONL."""
    if text is None:
        return None
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
