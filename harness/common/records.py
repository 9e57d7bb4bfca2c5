"""The result schema: the one Result written per (problem, solution) pair, and its version."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from harness.common import store
from harness.common.errors import UserError
from harness.common.verdict import Status

SCHEMA_VERSION = 1  # readers refuse versions they do not know


class SchemaError(UserError):
    """Results of a schema version this harness does not read."""


def check_schema_version(version: Any, where: str) -> None:
    """Refuse a record of a schema version other than ours."""
    if version != SCHEMA_VERSION:
        raise SchemaError(f"{where}: schema_version {version!r}; this harness reads version {SCHEMA_VERSION} "
                          f"(results written by another version of the harness: read them with that version)")


CSV = ("csv",)  # shown in speedups.csv (and where boards.LEADERBOARD_ORDER names it)


def column(doc: str, default: Any = dataclasses.MISSING, *, factory: Any = dataclasses.MISSING,
           shown_in: tuple = ()) -> Any:
    """A Result field with its meaning (docs/results.md) and the tables showing it as a column."""
    return field(default=default, default_factory=factory,  # type: ignore[call-overload]  # one of the two is MISSING
                 metadata={"doc": doc, "shown_in": shown_in})


@dataclass
class Result:
    """One line of results.jsonl, each field declared once, contract fields first. A new column: a field here (and its
    name in boards.LEADERBOARD_ORDER)."""

    problem: str = column("problem name (file stem)", shown_in=CSV)
    solution: str = column("candidate name (file stem)", shown_in=CSV)
    status: Status = column("the verdict: correct, incorrect, compile_error, runtime_error, timeout, crash, skipped, "
                            "or "
                            "harness_error (the harness failed, not the candidate)", shown_in=CSV)
    flags: list = column("suspicious findings (README: Statuses and flags)", factory=list, shown_in=CSV)
    speedup: Optional[float] = column("reference time / candidate time: exp(median over pairs of rounds of their mean "
                                      "log(ref / new)), each round's two samples taken back to back, each pair opened "
                                      "once by each side", None, shown_in=CSV)
    speedup_ci_low: Optional[float] = column("95% confidence interval of the speedup (a sign test over pairs of "
                                             "rounds, "
                                             "widened by the harness's resolution: timing_resolution_pct, "
                                             "batched_resolution_pct or cpu_resolution_pct, at least "
                                             "host_bound_resolution_pct for a pair bound by the host and a GPU model's "
                                             "gpu_resolution_pct), low end", None,
                                             shown_in=CSV)
    speedup_ci_high: Optional[float] = column("the same interval's high end", None, shown_in=CSV)
    resolution_pct: Optional[float] = column("the harness's resolution the CI was widened by on each side, percent "
                                             "(timing_resolution_pct, batched_, cpu_ or host_bound_resolution_pct): "
                                             "no number of rounds narrows the CI below it", None)
    tie: Optional[bool] = column("true when the speedup is within 2% of 1 and its CI holds 1", None, shown_in=CSV)
    ref_ms: Optional[float] = column("median time of one reference call, milliseconds", None, shown_in=CSV)
    new_ms: Optional[float] = column("median time of one candidate call, milliseconds", None, shown_in=CSV)
    max_abs_err: Optional[float] = column("worst |candidate - reference| over all correctness trials", None,
                                          shown_in=CSV)
    max_rel_err: Optional[float] = column("worst |candidate - reference| / max(|reference|, atol) over all trials",
                                          None, shown_in=CSV)
    gbps: Optional[float] = column("candidate's achieved bandwidth (inputs + weights + outputs, once each), GB/s", None,
                                   shown_in=CSV)
    tflops: Optional[float] = column("candidate's achieved TFLOP/s (FLOPs counted on the reference with "
                                     "FlopCounterMode); empty for 0 FLOPs", None, shown_in=CSV)
    sol_pct: Optional[float] = column("candidate's speed of light: roofline floor time / candidate time, percent", None,
                                      shown_in=CSV)
    ref_sol_pct: Optional[float] = column("the same for the reference, percent", None, shown_in=CSV)
    compile_s: Optional[float] = column("seconds spent in extension builds, in the build stage or the evaluation "
                                        "(at import, in `ModelNew(...)` or in a successful forward call; near 0 on a "
                                        "build-cache hit)", None, shown_in=CSV)
    wall_s: Optional[float] = column("wall time of the pair's evaluation (the build stage, run ahead, is in "
                                     "phases_s.build_stage)", None, shown_in=CSV)
    device: Optional[str] = column("device the pair ran on (cuda:N or cpu)", None, shown_in=CSV)
    gpu: Optional[str] = column("GPU model (empty on the CPU)", None, shown_in=CSV)
    error: Optional[str] = column("one-line reason for a status other than correct", None, shown_in=CSV)
    # Evidence and provenance beyond the contract fields.
    key: Optional[str] = column("what --resume matches: the problem's and the candidate's sha256 and the config's "
                                "hash", None)
    problem_path: Optional[str] = column("the problem file judged", None)
    solution_path: Optional[str] = column("the candidate file judged", None)
    overrides: Optional[dict] = column("the module constants set for this pair (--set, a manifest entry's set)", None)
    ref_gbps: Optional[float] = column("the reference's achieved bandwidth, GB/s", None)
    ref_tflops: Optional[float] = column("the reference's achieved TFLOP/s", None)
    flops: Optional[int] = column("FLOPs of one reference call (FlopCounterMode, counted once per problem in a run)",
                                  None)
    tf32_flops: Optional[int] = column("of those FLOPs, the ones the math flags let run on TF32 tensor cores (the "
                                       "convolutions', under PyTorch's defaults); the floor counts them for float32 "
                                       "pairs on a GPU", None)
    floor_ms: Optional[float] = column("the roofline floor of one call: the larger of bytes / peak bandwidth and FLOPs "
                                       "/ peak FLOP/s (tf32_flops at the TF32 rate), ms", None)
    ref_err_vs_fp64: Optional[float] = column("the reference's worst error against the float64 truth, in tolerances "
                                              "(null: not finite, or no truth)", None)
    new_err_vs_fp64: Optional[float] = column("the same for the candidate", None)
    trials: Optional[int] = column("correctness trials run", None)
    compiled_ms: Optional[float] = column("torch.compile baseline's median time, ms (compile_baseline on)", None)
    compiled_error: Optional[str] = column("why the torch.compile baseline failed", None)
    cache: Optional[str] = column("cold or hot cache in timed calls", None)
    ref_timer: Optional[str] = column("the reference's timing method (cuda_event, cuda_graph, batched_events, "
                                      "perf_counter)", None)
    new_timer: Optional[str] = column("the candidate's timing method", None)
    ref_batch: Optional[int] = column("calls a reference sample times: k windows of one call (cuda_event), or k calls "
                                      "a window", None)
    new_batch: Optional[int] = column("the same for the candidate", None)
    orphans_killed: Optional[int] = column("processes the candidate left running, killed when the pair ended", None)
    timed_outputs_checked: Optional[int] = column("timing rounds whose candidate output the judge checked", None)
    judge_wall_ms: Optional[float] = column("the judge's own median clock around one candidate timing request, ms",
                                            None)
    rounds_discarded: Optional[int] = column("timing rounds dropped because another process used the GPU around "
                                             "their windows", None)
    gpu_wait_ms: Optional[float] = column("milliseconds spent before windows probing the GPU and waiting for other "
                                          "processes' work to drain (GPU only)", None)
    clocks: Optional[dict] = column("NVML clocks (MHz, min and max) and throttle reasons during the timing", None)
    timing_rounds: Optional[int] = column("timing rounds run", None)
    ref_samples_ms: list = column("the reference's raw samples: one call's time each (ms)", factory=list)
    new_samples_ms: list = column("the candidate's raw samples", factory=list)
    round_order: Optional[str] = column("which side each kept round timed first: R (the reference) or N (the "
                                        "candidate), one letter a round, in the samples' order", None)
    ref_wall_ms: list = column("host wall time around each reference sample (ms)", factory=list)
    new_wall_ms: list = column("the same for the candidate", factory=list)
    peak_mem_mb: Optional[dict] = column("peak memory (MB) of the judge, the candidate's worker and the "
                                         "reference_worker: on a GPU each caching allocator's peak, on the CPU the "
                                         "resident set", None)
    worker_ooms: Optional[dict] = column("allocations that found no GPU memory in the candidate's worker and the "
                                         "reference_worker, those a library caught and fell back from included (a "
                                         "convolution then runs a cuDNN algorithm with a smaller workspace); GPU only",
                                         None)
    precision: Optional[str] = column("fp32, fp16 or bf16: the dtype of float inputs and weights (--precision)", None)
    preset: Optional[str] = column("the preset the pair was judged under (--preset rl: fewer trials and rounds, a "
                                   "wider CI); empty for the defaults", None)
    backend: Optional[str] = column("what the candidate computes with: triton, cuda, cpp or torch (its source, and the "
                                    "runtime trace)", None)
    phases_s: Optional[dict] = column("where the pair's time went, wall seconds per stage (`build_stage`, "
                                      "`judge_start`, `reference`, `build`, `workers`, `correctness`, "
                                      "`timing_setup`, `timing`, `finish`, `judge_exit`); dotted names are parts of "
                                      "their parent, but for `judge_start.*`: the judge's own start-up steps, mostly "
                                      "before its pair was sent", None)
    mode: Optional[str] = column("the modules' mode: constructed (KernelBench's: training unless __init__ says) or "
                                 "eval", None)
    stateful: Optional[bool] = column("true when the problem's forward changes module state that its next output "
                                      "depends on (KernelBench v0's VanillaRNN): both sides were judged in lockstep "
                                      "(README: How a pair is judged)", None)
    blocks: Optional[list] = column("a result near 1.0 that is no tie, confirmed on fresh workers: each block's "
                                    "speedup, CI, medians and rounds (the first block is the pair's own); the reported "
                                    "CI spans every block's (README: Timing)", None)
    problem_findings: list = column("what makes the problem degenerate (the lint's findings)", factory=list)
    notes: list = column("how the pair was judged where that differs from the usual (a random reference, wide inputs "
                         "the reference rejected, ...)", factory=list)
    torch_version: Optional[str] = column("torch version of the run", None)
    cuda_version: Optional[str] = column("CUDA version torch was built with", None)
    harness: Optional[str] = column("git commit of the harness, or sha:<hash of harness/*.py> without a clean "
                                    "checkout", None)
    finished_at: Optional[str] = column("UTC time the pair ended (ISO 8601)", None)
    schema_version: int = column("version of the result schema (readers refuse others)", SCHEMA_VERSION)

    def __post_init__(self):
        self.status = Status(self.status)  # a str from JSON; an unknown one is a ValueError

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form, flags sorted."""
        data = dataclasses.asdict(self)
        data["status"], data["flags"] = self.status.value, sorted(set(self.flags))
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Result":
        """A Result from JSON, ignoring unknown fields."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def shown_in(table: str) -> list[str]:
    """The fields a table shows as columns, in declaration order."""
    return [f.name for f in dataclasses.fields(Result) if table in f.metadata["shown_in"]]


def meaning(name: str) -> str:
    """What a Result field means."""
    return next(f.metadata["doc"] for f in dataclasses.fields(Result) if f.name == name)


def fields_table() -> str:
    """docs/results.md's table of Result's fields."""
    return meanings_table("field", [(f.name, f.metadata["doc"]) for f in dataclasses.fields(Result)])


def meanings_table(heading: str, meanings: list) -> str:
    """A markdown table of (name, meaning) rows."""
    rows = [f"| `{name}` | {text.replace('|', chr(92) + '|')} |" for name, text in meanings]
    return "\n".join([f"| {heading} | meaning |", "|---|---|", *rows]) + "\n"


def read_results(path: Path) -> tuple[list[Result], int]:
    """A results.jsonl's Results and torn-line count; SchemaError for another schema."""
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
    """A Result for a pair that got no verdict on its numbers."""
    return Result(problem=problem, solution=solution, status=status, error=one_line(error), **extra)


def one_line(text: Optional[str], limit: int = 500) -> Optional[str]:
    """A message squashed to one line of at most `limit` characters, cut near a word's end."""
    if text is None:
        return None
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 3]
    space = cut.rfind(" ")
    return (cut[:space] if space >= 0.8 * len(cut) else cut).rstrip(" ,;:") + "..."
