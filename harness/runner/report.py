"""Tables from results: speedups.csv (pandas), the console's rich table, and a finished pair in a few words."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from rich.console import Console, JustifyMethod
from rich.table import Table

from harness.common import records, store, verdict
from harness.common.records import Result, one_line

CSV_COLUMNS = records.shown_in("csv")  # the README's contract fields, declared in records.Result
STATUS_STYLE = {"correct": "green", "incorrect": "red", "compile_error": "magenta", "runtime_error": "red",
                "timeout": "yellow", "crash": "bold red", "skipped": "dim",
                "harness_error": "bold yellow on red"}


def speedups_frame(results: list[Result]) -> pd.DataFrame:
    """One row per pair, contract columns only, sorted by problem then speedup (fastest first)."""
    rows = []
    for r in results:
        row = {c: getattr(r, c) for c in CSV_COLUMNS}
        row["status"], row["flags"] = r.status.value, ";".join(sorted(set(r.flags)))
        rows.append(row)
    frame = pd.DataFrame(rows, columns=CSV_COLUMNS)
    return frame.sort_values(["problem", "speedup", "solution"], ascending=[True, False, True],
                             na_position="last", kind="mergesort").reset_index(drop=True)


def write_tables(run_dir: Path, results: list[Result]) -> None:
    """Rewrite speedups.csv whole (temporary file + os.replace)."""
    frame = speedups_frame(results)
    store.write_atomic(Path(run_dir) / "speedups.csv", frame.to_csv(index=False, float_format="%.6g"))


def fmt(value, spec: str) -> str:
    return "-" if value is None or value != value else format(value, spec)


def console_table(results: list[Result], title: str) -> Table:
    """The rich table printed at the end of a run."""
    table = Table(title=title, title_justify="left")
    columns: list[tuple[str, JustifyMethod]] = [
        ("problem", "left"), ("solution", "left"), ("status", "left"), ("ref ms", "right"), ("new ms", "right"),
        ("speedup [95% CI]", "right"), ("SOL %", "right"), ("max abs err", "right")]
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=True)
    table.add_column("flags / reason", overflow="fold", min_width=24)
    for r in speedups_rows(results):
        speed = speed_text(r) or "-"
        notes = ", ".join(sorted(set(r.flags)))
        if r.error:  # a skip's reason ends with what to do about it (the --set to shrink a problem): kept whole
            limit = len(r.error) if r.status == "skipped" else 160
            notes = (notes + "; " if notes else "") + (r.error[:limit] + ("..." if len(r.error) > limit else ""))
        style = STATUS_STYLE.get(r.status, "")
        table.add_row(r.problem, r.solution, f"[{style}]{r.status}[/]", fmt(r.ref_ms, ".4g"), fmt(r.new_ms, ".4g"),
                      speed, fmt(r.sol_pct, ".1f"), fmt(r.max_abs_err, ".2e"), notes)
    return table


def speed_text(r: Result) -> str:
    """'1.234 [1.200, 1.260]', 'tie 1.001 [...]', or '' without a speedup."""
    if r.speedup is None:
        return ""
    return ("tie " if r.tie else "") + f"{r.speedup:.3f} [{r.speedup_ci_low:.3f}, {r.speedup_ci_high:.3f}]"


def outcome(r: Result) -> str:
    """A finished pair in a few words: its status, its speedup (and flags that void it), or its reason."""
    if r.status == "correct":
        unranked = verdict.not_counted_reason(r.flags)  # flags that make the speedup no measurement
        blocks = f" ({len(r.blocks)} blocks of fresh workers)" if r.blocks else ""
        return ("correct" + (f", {speed_text(r)}" if r.speedup is not None else "") + blocks
                + (f" ({unranked})" if unranked else ""))
    return f"{r.status}" + (f": {one_line(r.error, 200)}" if r.error else "")


def compare_table(changes: list) -> Table:
    """The table of `run.py compare`."""
    table = Table(title="Changes (a speedup change is real only when the 95% CIs do not overlap)", title_justify="left")
    for name in ("problem", "candidate", "status", "speedup", "change"):
        table.add_column(name, no_wrap=True)
    style = {"faster": "green", "slower": "red", "status changed": "yellow"}
    for c in changes:
        status = c.new_status if c.old_status == c.new_status else f"{c.old_status or '-'} -> {c.new_status or '-'}"
        speed = f"{fmt(c.old_speedup, '.3f')} -> {fmt(c.new_speedup, '.3f')}"
        color = style.get(c.verdict)
        table.add_row(c.problem, c.candidate, status, speed, f"[{color}]{c.verdict}[/]" if color else c.verdict)
    return table


def speedups_rows(results: list[Result]) -> list[Result]:
    """Results in the order of the CSV."""
    order = {(row.problem, row.solution): i for i, row in speedups_frame(results).iterrows()}
    return sorted(results, key=lambda r: order.get((r.problem, r.solution), 0))


def wide_console(stderr: bool = False) -> Console:
    """A console at least 160 columns wide when output is not a terminal (logs, CI), so tables stay readable."""
    console = Console(stderr=stderr)
    return console if console.is_terminal else Console(stderr=stderr, width=160)


def print_summary(results: list[Result], run_dir: Path, console: Console) -> None:
    """The table, a count per status, and where the files are."""
    console.print(console_table(results, f"Results ({len(results)} pairs)"))
    counts = pd.Series([r.status for r in results]).value_counts()
    console.print("  ".join(f"{status}: {n}" for status, n in counts.items()))
    console.print(f"Results in {run_dir}/ (results.jsonl, leaderboard.csv, aggregates.csv, summary.md, "
                  "speedups.png, roofline.png, meta.json, logs/)")
