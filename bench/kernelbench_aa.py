"""A/A runs of KernelBench problems: each problem judged against itself (its own source plus
`class ModelNew(Model): pass`), through the harness's own --manifest path, with --resume so that a sweep can
span several calls. An honest harness finds every such pair correct, unflagged (but for no_custom_kernel), a tie.

    python bench/kernelbench_aa.py KERNELBENCH_DIR --out DIR [--levels 1,2] [--problems level1/51_ ...]
                                   [--every N] [-- RUN_PY_ARGS ...]

KERNELBENCH_DIR is the folder holding level1/, level2/, ... (ScalingIntelligence/KernelBench's KernelBench/).
Writes DIR/candidates/ and DIR/pairs.csv (never commit KernelBench's files), DIR/run/ (the harness's run folder),
and DIR/kernelbench-aa.jsonl and .md: per problem the status, flags, speedup and CI, tie, ref ms and wall s.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from aa_coverage import aa_source  # noqa: E402  (one A/A candidate for both benches)
EXPECTED_FLAGS = {"no_custom_kernel"}  # an A/A candidate launches exactly the reference's kernels


def select_problems(root: Path, levels: list, prefixes: list, every: int) -> list[Path]:
    """Problem files of the levels (every Nth of each, by number), or those whose level/name starts with a prefix."""
    if prefixes:
        found = [p for prefix in prefixes for p in sorted(root.glob(prefix + "*.py"))]
        missing = [prefix for prefix in prefixes if not list(root.glob(prefix + "*.py"))]
        if missing:
            raise SystemExit(f"no KernelBench problem matches {', '.join(missing)} under {root}")
        return found
    chosen = []
    for level in levels:
        files = sorted((root / f"level{level}").glob("*.py"), key=lambda p: int(p.name.split("_")[0]))
        chosen += files[::every]
    return chosen


def write_pairs(problems: list[Path], out: Path) -> Path:
    """One A/A candidate per problem, and the manifest that pairs them."""
    folder = out / "candidates"
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["problem,candidate"]
    for problem in problems:
        candidate = folder / f"{problem.parent.name}_{problem.name}"
        candidate.write_text(aa_source(problem))
        lines.append(f"{problem.resolve()},{candidate.resolve()}")
    manifest = out / "pairs.csv"
    manifest.write_text("\n".join(lines) + "\n")
    return manifest


def summarize(run_dir: Path) -> list[dict]:
    """The bench's row per pair, from the run's results.jsonl."""
    rows = []
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        rows.append({"problem": r["problem"], "status": r["status"], "flags": r["flags"],
                     "false_flags": sorted(set(r["flags"]) - EXPECTED_FLAGS), "speedup": r["speedup"],
                     "speedup_ci": [r["speedup_ci_low"], r["speedup_ci_high"]], "tie": r["tie"], "ref_ms": r["ref_ms"],
                     "wall_s": r["wall_s"], "error": r["error"], "gpu": r["gpu"], "harness": r["harness"]})
    return rows


def markdown(rows: list[dict]) -> str:
    """The table and its totals."""
    correct = sum(r["status"] == "correct" for r in rows)
    ties = sum(bool(r["tie"]) for r in rows)
    flagged = sum(bool(r["false_flags"]) for r in rows)
    wall = sum(r["wall_s"] or 0.0 for r in rows)
    lines = [f"{len(rows)} pairs: {correct} correct, {ties} ties, {flagged} with a false flag; "
             f"{wall:.0f} s of pair wall time ({3600 * len(rows) / wall:.0f} pairs per hour)." if wall else "",
             "", "| problem | status | flags | speedup [95% CI] | tie | ref ms | wall s |", "|---|---|---|---|---|---:|---:|"]
    for r in rows:
        speed = "-" if r["speedup"] is None else f"{r['speedup']:.3f} [{r['speedup_ci'][0]:.3f}, {r['speedup_ci'][1]:.3f}]"
        notes = ", ".join(r["flags"]) + (f"; {r['error'][:120]}" if r["error"] else "")
        ref = "-" if r["ref_ms"] is None else f"{r['ref_ms']:.4g}"
        lines.append(f"| {r['problem']} | {r['status']} | {notes.replace('|', '/')} | {speed} | {r['tie']} | {ref} | "
                     f"{r['wall_s']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernelbench_dir", type=Path, help="the folder holding level1/, level2/, ...")
    parser.add_argument("--out", type=Path, required=True, help="bench folder (candidates, manifest, run, tables)")
    parser.add_argument("--levels", default="1,2,3", help="levels to take problems from (default 1,2,3)")
    parser.add_argument("--every", type=int, default=1, help="take every Nth problem of each level (default all)")
    parser.add_argument("--problems", nargs="*", default=[], help="level/name prefixes, e.g. level1/51_ (instead of levels)")
    args, run_args = parser.parse_known_args(argv)  # the rest (after --) goes to run.py
    problems = select_problems(args.kernelbench_dir, [int(x) for x in args.levels.split(",")], args.problems, args.every)
    manifest = write_pairs(problems, args.out)
    run_dir = args.out / "run"
    extra = [a for a in run_args if a != "--"]
    command = [sys.executable, "run.py", "--manifest", str(manifest.resolve()), "--out", str(run_dir.resolve()),
               "--resume", *extra]
    print(" ".join(command[1:]), flush=True)
    code = subprocess.run(command, cwd=ROOT).returncode
    rows = summarize(run_dir) if (run_dir / "results.jsonl").exists() else []
    (args.out / "kernelbench-aa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (args.out / "kernelbench-aa.md").write_text(markdown(rows))
    print(markdown(rows))
    return code


if __name__ == "__main__":
    sys.exit(main())
