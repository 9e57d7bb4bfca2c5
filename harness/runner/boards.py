"""Published outputs of a run, rebuilt from its results.jsonl alone: the leaderboard, the aggregates per
candidate set, summary.md and its plots. Same records in, same bytes out (docs/leaderboard.md)."""
from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Optional

import pandas as pd

from harness.common import records, store, verdict
from harness.common.records import Result

# leaderboard.csv's columns in order: a Result field (meaning declared there) or BOARD_ONLY (made in `leaderboard`);
# docs/leaderboard.md's table is made from them (a test checks it).
LEADERBOARD_ORDER = ["problem", "rank", "candidate", "candidate_set", "backend", "precision", "mode", "sizes", "status",
                     "flags",
                     "speedup", "speedup_ci_low", "speedup_ci_high", "tie", "ref_ms", "new_ms", "sol_pct",
                     "ref_sol_pct", "gbps", "tflops", "max_abs_err", "new_peak_mb", "ref_peak_mb", "judge_peak_mb",
                     "gpu", "device", "torch", "cuda", "harness", "date", "reason", "schema_version"]
BOARD_ONLY = {
    "rank": "1 = fastest correct candidate of its problem; empty when not correct, or when its speedup is not a "
            "measurement (noisy_timing, interference)",
    "candidate": "candidate name (file stem)",
    "sizes": "the --set values the pair was given (name=value ..., the run's and its manifest entry's; empty: the "
             "problem's own sizes): a baseline row is compared only with a pair given the same, on the same GPU model, "
             "precision and mode",
    "candidate_set": "the folder the candidate came from (solutions/<problem>/x.py: solutions)",
    "flags": "suspicious findings, ';'-separated (README: Statuses and flags)",
    "new_peak_mb": "peak memory of the candidate's worker, MB (GPU: its caching allocator's peak, the harness's copy "
                   "of the timing inputs included; CPU: its resident set)",
    "ref_peak_mb": "the same for the reference's worker",
    "judge_peak_mb": "the same for the judge (the reference's outputs, the float64 truth, the inputs it hands out)",
    "torch": "torch version of the run",
    "cuda": "CUDA version torch was built with",
    "date": "UTC date the pair was judged (YYYY-MM-DD)",
    "reason": "one-line reason for a status other than correct, or why a correct candidate's speedup is not ranked",
}
LEADERBOARD_COLUMNS = [(c, BOARD_ONLY[c] if c in BOARD_ONLY else records.meaning(c)) for c in LEADERBOARD_ORDER]
FAST_P = (0.0, 1.0, 1.5, 2.0)
AGGREGATE_COLUMNS = [
    ("candidate_set", "the folder the candidates came from"),
    ("problems", "problems the set has a candidate for"),
    ("correct", "problems with at least one correct candidate"),
    *[(f"fast_{p:g}", f"share of the set's problems with a correct candidate whose speedup counts (not one flagged "
                      f"noisy_timing or interference: summary.md says how many were left out) and is > {p:g}")
      for p in FAST_P],
    ("geomean_speedup", "geometric mean speedup over the problems whose best correct candidate's speedup counts"),
]
STATUS_ORDER = ["correct", "incorrect", "runtime_error", "timeout", "crash", "compile_error", "skipped",
                "harness_error"]


def candidate_set(result: Result) -> str:
    """The folder a candidate came from: solutions/<problem>/x.py is in set `solutions`, gen/x.py in `gen`."""
    if not result.solution_path:
        return ""
    folder = Path(result.solution_path).parent
    return (folder.parent if folder.name == result.problem else folder).name


def leaderboard(results: list[Result], meta: Optional[dict] = None) -> pd.DataFrame:
    """One row per (problem, candidate), ranked per problem: correct ones by speedup, then the rest by status."""
    meta = meta or {}
    rows = []
    for r in results:
        row = {c: getattr(r, c) for c in LEADERBOARD_ORDER if c not in BOARD_ONLY}
        rows.append({**row, **peaks(r.peak_mem_mb), "candidate": r.solution, "candidate_set": candidate_set(r),
                     "status": r.status.value, "flags": ";".join(sorted(set(r.flags))),
                     # records made before a field existed: the run's meta.json has it
                     "precision": r.precision or (meta.get("config") or {}).get("precision", "fp32"),
                     "mode": r.mode or (meta.get("config") or {}).get("mode", "constructed"),
                     "sizes": verdict.sizes_text(r.overrides),
                     "torch": r.torch_version or meta.get("torch"), "cuda": r.cuda_version or meta.get("cuda_version"),
                     "harness": r.harness or meta_harness(meta),
                     "date": (r.finished_at or meta.get("started") or "")[:10],
                     "reason": r.error or verdict.unranked_reason(r)})
    frame = pd.DataFrame(rows, columns=[c for c, _ in LEADERBOARD_COLUMNS if c != "rank"])
    frame["_status"] = frame["status"].map(lambda s: STATUS_ORDER.index(s) if s in STATUS_ORDER else len(STATUS_ORDER))
    # A speedup that is no measurement (verdict.FLAGS) is listed after the ranked ones, unranked.
    frame["_speed"] = counted_speedups(frame)
    frame = frame.sort_values(["problem", "_status", "_speed", "candidate"], ascending=[True, True, False, True],
                              na_position="last", kind="mergesort")
    ranked = frame["_speed"].notna()
    frame["rank"] = pd.array([None] * len(frame), dtype="Int64")
    frame.loc[ranked, "rank"] = frame[ranked].groupby("problem").cumcount() + 1
    return frame[[c for c, _ in LEADERBOARD_COLUMNS]].reset_index(drop=True)


def peaks(peak_mem_mb) -> dict:
    """The three peak-memory columns from a result's peak_mem_mb (older records may lack some)."""
    peak = peak_mem_mb if isinstance(peak_mem_mb, dict) else {}
    return {"new_peak_mb": peak.get("worker"), "ref_peak_mb": peak.get("reference_worker"),
            "judge_peak_mb": peak.get("judge")}


def counted_speedups(frame: pd.DataFrame) -> pd.Series:
    """Each row's speedup where it counts (verdict.speedup_counts), else NaN."""
    counts = [verdict.speedup_counts(status, [f for f in flags.split(";") if f])
              for status, flags in zip(frame["status"], frame["flags"].fillna(""))]
    return frame["speedup"].where(pd.Series(counts, index=frame.index, dtype=bool))


def meta_harness(meta: dict) -> Optional[str]:
    """The harness version in meta.json: its source hash first (the git commit may be a stale checkout's)."""
    if meta.get("harness_sha"):
        return f"sha:{meta['harness_sha']}"
    return meta.get("git_commit")


def aggregates(board: pd.DataFrame) -> pd.DataFrame:
    """fast_p and the geometric mean speedup per candidate set (and `all`), best correct candidate per problem."""
    rows = []
    board = board[board["status"] != "harness_error"]  # says nothing of the candidate
    for name, group in [*sorted(board.groupby("candidate_set")), ("all", board)]:
        problems = sorted(group["problem"].unique())
        correct = group[group["status"] == "correct"]
        best = counted_speedups(correct).groupby(correct["problem"]).max()  # the unmeasured count as correct, not fast
        row = {"candidate_set": name, "problems": len(problems), "correct": len(best)}
        best = best.dropna()
        for p in FAST_P:
            row[f"fast_{p:g}"] = round(float((best > p).sum()) / len(problems), 4) if problems else None
        row["geomean_speedup"] = round(math.exp(sum(math.log(s) for s in best) / len(best)), 4) \
            if len(best) and (best > 0).all() else None
        rows.append(row)
    return pd.DataFrame(rows, columns=[c for c, _ in AGGREGATE_COLUMNS])


def to_csv(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False, float_format="%.6g", lineterminator="\n")


def summary_markdown(board: pd.DataFrame, totals: pd.DataFrame, title: str) -> str:
    """summary.md: what a person reads in a pull request."""
    lines = [f"# {title}", ""]
    gpus = ", ".join(sorted({g for g in board["gpu"].dropna()})) or "CPU"
    versions = sorted({f"torch {t}, CUDA {c}" for t, c in zip(board["torch"].fillna("?"), board["cuda"].fillna("-"))})
    harness = ", ".join(sorted({str(h)[:12] for h in board["harness"].dropna()})) or "unknown"
    dates = sorted(d for d in board["date"].dropna() if d)
    lines += [f"{len(board)} pair(s) on {gpus}; {'; '.join(versions)}; harness {harness}"
              + (f"; {dates[0]}" + (f" to {dates[-1]}" if dates[-1] != dates[0] else "") if dates else "") + ".", ""]
    counts = board["status"].value_counts()
    lines += ["Statuses: " + ", ".join(f"{s} {counts[s]}" for s in STATUS_ORDER if s in counts) + ".", ""]
    lines += ["| candidate set | problems | correct | fast_0 | fast_1 | fast_1.5 | fast_2 | geomean speedup |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in totals.itertuples(index=False):
        fast = " | ".join(cell(v, ".2f") for v in row[3:7])
        lines.append(f"| {row.candidate_set} | {row.problems} | {row.correct} | {fast} | "
                     f"{cell(row.geomean_speedup, '.3f')} |")
    uncounted = board[(board["status"] == "correct") & board["speedup"].notna() & counted_speedups(board).isna()]
    if len(uncounted):
        lines += ["", f"fast_p and the geomean count only speedups that are measurements: {len(uncounted)} correct "
                      f"pair(s) left out ({', '.join(sorted(set(';'.join(uncounted['flags']).split(';')) - {''}))})."]
    lines += ["", "| problem | rank | candidate | status | speedup [95% CI] | ref ms | new ms | SOL % | peak MB | "
                  "flags / reason |", "|---|---:|---|---|---|---:|---:|---:|---:|---|"]
    for r in board.itertuples(index=False):
        speed = "-" if pd.isna(r.speedup) else f"{r.speedup:.3f} [{r.speedup_ci_low:.3f}, {r.speedup_ci_high:.3f}]"
        notes = "; ".join(x for x in (r.flags, "" if pd.isna(r.reason) else records.one_line(str(r.reason), 200)) if x)
        lines.append(f"| {r.problem} | {cell(r.rank, 'd')} | {r.candidate} | {r.status} | {speed} | "
                     f"{cell(r.ref_ms, '.4g')} | "
                     f"{cell(r.new_ms, '.4g')} | {cell(r.sol_pct, '.1f')} | {cell(r.new_peak_mb, '.0f')} | "
                     f"{notes.replace('|', '/')} |")
    lines += ["", "![speedup per candidate](speedups.png)", "", "![share of the speed of light](roofline.png)", ""]
    return "\n".join(lines)


def cell(value, spec: str) -> str:
    return "-" if value is None or pd.isna(value) else format(value, spec)


def plot_speedups(board: pd.DataFrame) -> bytes:
    """Speedup of each correct candidate with its 95% CI; the line at 1 is the reference."""
    correct = board[(board["status"] == "correct") & board["speedup"].notna()].iloc[::-1]
    labels = [f"{p} / {c}" for p, c in zip(correct["problem"], correct["candidate"])]

    def draw(ax):
        if not len(correct):
            say_empty(ax)
        if len(correct):
            low = (correct["speedup"] - correct["speedup_ci_low"]).clip(lower=0)
            high = (correct["speedup_ci_high"] - correct["speedup"]).clip(lower=0)
            ax.barh(labels, correct["speedup"], xerr=[low, high], color="#4c72b0", capsize=3)
        ax.axvline(1.0, color="black", linewidth=1)
        ax.set_xlabel("speedup over the reference (95% CI)")
        ax.set_title("Correct candidates")
        ax.figure.suptitle(measured_where(correct), fontsize=9)
    return render(draw, len(labels))


def plot_roofline(board: pd.DataFrame) -> bytes:
    """Achieved share of the speed of light (roofline floor / time) for each correct pair, both sides."""
    correct = board[(board["status"] == "correct") & board["sol_pct"].notna()].iloc[::-1]
    labels = [f"{p} / {c}" for p, c in zip(correct["problem"], correct["candidate"])]

    def draw(ax):
        if not labels:
            say_empty(ax)
        y = range(len(labels))
        ax.barh([i + 0.2 for i in y], correct["sol_pct"], height=0.4, label="candidate", color="#4c72b0")
        ax.barh([i - 0.2 for i in y], correct["ref_sol_pct"], height=0.4, label="reference", color="#bbbbbb")
        ax.set_yticks(list(y), labels)
        ax.axvline(100.0, color="black", linewidth=1)
        ax.set_xlabel("% of speed of light (roofline floor time / measured time)")
        ax.set_title("Achieved vs peak")
        ax.figure.suptitle(measured_where(correct), fontsize=9)
        if labels:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return render(draw, len(labels))


def measured_where(rows: pd.DataFrame) -> str:
    """What a plot's pairs were measured on, for its title: GPU models (or the CPU), precisions and --set sizes."""
    gpus = sorted({g for g in rows["gpu"].dropna() if g}) or ["CPU"]
    sizes = sorted({s for s in rows["sizes"].dropna() if s})
    return "; ".join([", ".join(gpus), ", ".join(sorted({p for p in rows["precision"].dropna() if p})) or "fp32",
                      "sizes " + (", ".join(sizes) if sizes else "as the problems set them")])


def say_empty(ax) -> None:
    """An empty plot says why it is empty."""
    ax.text(0.5, 0.5, "no correct candidate with a speedup to plot", ha="center", va="center", transform=ax.transAxes)


def render(draw, rows: int) -> bytes:
    """A PNG with no timestamp or version in it: the same data give the same bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 1.5 + 0.35 * max(rows, 1)), dpi=100)
    draw(ax)
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png", metadata={"Software": None})
    plt.close(fig)
    return out.getvalue()


def write_boards(run_dir: Path, results: list[Result], meta: Optional[dict] = None) -> pd.DataFrame:
    """leaderboard.csv, aggregates.csv, summary.md, speedups.png and roofline.png, each written whole."""
    run_dir = Path(run_dir)
    board = leaderboard(results, meta)
    totals = aggregates(board)
    store.write_atomic(run_dir / "leaderboard.csv", to_csv(board))
    store.write_atomic(run_dir / "aggregates.csv", to_csv(totals))
    store.write_atomic(run_dir / "summary.md", summary_markdown(board, totals, f"Results: {run_dir.name}"))
    for name, png in (("speedups.png", plot_speedups(board)), ("roofline.png", plot_roofline(board))):
        tmp = run_dir / f".{name}.tmp"
        tmp.write_bytes(png)
        tmp.replace(run_dir / name)
    return board
