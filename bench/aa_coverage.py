"""How often the speedup's 95% CI holds the truth: a problem judged against itself, N times, on this machine.

    python bench/aa_coverage.py --problem sigmoid --runs 20 --out DIR [--copies K] [--repeat N] [-- RUN_PY_ARGS ...]

Each run is one `python run.py --problem P --solution AA --out ...` as a user types it, plus RUN_PY_ARGS (say
`--device cpu --set batch_size=256 --set dim=16384`); AA is the problem's own source with
`class ModelNew(Model): pass`, so the true speedup is 1. `--copies K` judges K copies of AA in each run (each a
pair of its own, with its own judge and workers: cheaper than K runs on a GPU); `--repeat N` makes AA run the
reference's forward N times a call (a known slowdown for gates; not 1/N, as its repeated calls meet a warm cache). A
pair passes when its CI holds
1.0, or when it claims no speedup (`noisy_timing` or `interference`: boards do not rank it, a gate that asks for
speed fails it). Writes DIR/aa-coverage.jsonl (one line per pair) and DIR/aa-coverage.md (the command, the
counts, the spread of the point estimates), and skips runs already in the JSONL (so a sweep can span calls).
"""
from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
UNCLAIMED = {"noisy_timing", "interference"}


def aa_source(problem_file: Path, repeat: int = 1) -> str:
    """The problem's own code, and a ModelNew that is its Model (that runs its forward `repeat` times a call: a true
    speedup of 1/repeat)."""
    if repeat == 1:
        return problem_file.read_text() + "\n\nclass ModelNew(Model):\n    pass\n"
    return problem_file.read_text() + (
        "\n\nclass ModelNew(Model):\n    def forward(self, *args):\n"
        f"        for _ in range({repeat - 1}):\n            Model.forward(self, *args)\n"
        "        return Model.forward(self, *args)\n")


def problem_file(name: str) -> Path:
    path = Path(name)
    if path.suffix == ".py" and path.exists():
        return path
    found = ROOT / "problems" / f"{name}.py"
    if not found.exists():
        raise SystemExit(f"no problem {name!r}: give problems/NAME.py's NAME or a file path")
    return found


def verdict(result: dict, truth=1.0) -> str:
    """held (the CI holds the true speedup), unclaimed (no speedup claimed), missed, claimed (a true speedup not known:
    --repeat, whose repeated calls meet a warm cache), or the status of a pair that did not time."""
    if result["status"] != "correct" or result.get("speedup") is None:
        return "unclaimed" if UNCLAIMED & set(result.get("flags") or []) else result["status"]
    if UNCLAIMED & set(result["flags"]):
        return "unclaimed"
    if truth is None:
        return "claimed"
    return "held" if result["speedup_ci_low"] <= truth <= result["speedup_ci_high"] else "missed"


def one_run(index: int, problem: Path, candidates: list, out: Path, extra: list, timeout: float,
            truth: float = 1.0) -> list[dict]:
    """One run.py invocation; a row per pair."""
    run_dir = out / "runs" / f"run{index:03d}"
    command = [sys.executable, "run.py", "--problem", str(problem), *[a for c in candidates for a in ("--solution", str(c))],
               "--out", str(run_dir), *extra]
    started = time.monotonic()
    with open(out / "runs" / f"run{index:03d}.log", "w") as log:
        code = subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=timeout).returncode
    wall = time.monotonic() - started
    results = run_dir / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    if not rows:
        return [{"run": index, "exit": code, "run_wall_s": round(wall, 1), "verdict": "no_result"}]
    return [{"run": index, "exit": code, "run_wall_s": round(wall, 1), "candidate": r["solution"], "status": r["status"],
             "speedup": r.get("speedup"), "ci": [r.get("speedup_ci_low"), r.get("speedup_ci_high")], "tie": r.get("tie"),
             "flags": r.get("flags"), "rounds": r.get("timing_rounds"), "ref_ms": r.get("ref_ms"),
             "pair_wall_s": r.get("wall_s"), "device": r.get("device"), "gpu": r.get("gpu"), "verdict": verdict(r, truth)}
            for r in rows]


def report(rows: list[dict], command: str) -> str:
    """The Markdown summary of the pairs so far."""
    counts = {v: sum(r["verdict"] == v for r in rows) for v in sorted({r["verdict"] for r in rows})}
    speedups = [r["speedup"] for r in rows if r.get("speedup") is not None]
    claimed = [r for r in rows if r["verdict"] in ("held", "missed")]
    device = next((r.get("gpu") or r.get("device") for r in rows if r.get("device")), "?")
    lines = ["# A/A coverage", "", f"`{command}`", "", f"Device: {device}. Pairs: {len(rows)}.", "",
             f"- CI holds 1.0: {counts.get('held', 0)}; no speedup claimed (noisy_timing, interference): "
             f"{counts.get('unclaimed', 0)}; CI misses 1.0: {counts.get('missed', 0)}"
             + "".join(f"; {v}: {n}" for v, n in counts.items() if v not in ("held", "unclaimed", "missed")) + ".",
             f"- Passing (held or unclaimed): {counts.get('held', 0) + counts.get('unclaimed', 0)} of {len(rows)}."]
    if speedups:
        lines.append(f"- Point estimates: min {min(speedups):.4f}, median {statistics.median(speedups):.4f}, "
                     f"max {max(speedups):.4f}" + (f", SD {statistics.stdev(speedups):.4f}" if len(speedups) > 1 else "")
                     + f"; of the {len(claimed)} claimed, median CI half-width "
                     + (f"{statistics.median((r['ci'][1] - r['ci'][0]) / 2 for r in claimed) * 100:.2f}%." if claimed else "-."))
    if "--gate" in command:
        runs = {r["run"]: r.get("exit") for r in rows}
        lines.append(f"- Gate: exit 0 (passed) in {sum(code == 0 for code in runs.values())} of {len(runs)} runs, "
                     f"exit 1 (failed) in {sum(code == 1 for code in runs.values())}.")
    walls = [r["pair_wall_s"] for r in rows if r.get("pair_wall_s")]
    if walls:
        lines.append(f"- Pair wall: median {statistics.median(walls):.1f} s.")
    lines += ["", "| run | candidate | status | speedup [95% CI] | rounds | ref ms | verdict | flags |",
              "|---:|---|---|---|---:|---:|---|---|"]
    for r in rows:
        speed = "-" if r.get("speedup") is None else f"{r['speedup']:.4f} [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}]"
        ref = "-" if r.get("ref_ms") is None else f"{r['ref_ms']:.4g}"
        lines.append(f"| {r['run']} | {r.get('candidate', '-')} | {r.get('status', '-')} | {speed} | {r.get('rounds') or '-'} "
                     f"| {ref} | {r['verdict']} | {', '.join(r.get('flags') or [])} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", required=True, help="problems/NAME.py's NAME, or a problem file")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--copies", type=int, default=1, help="A/A pairs per run (default 1)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--repeat", type=int, default=1,
                        help="the candidate runs the reference's forward this many times a call (a known slowdown)")
    parser.add_argument("run_args", nargs=argparse.REMAINDER, help="after --: arguments added to each run.py command")
    args = parser.parse_args()
    extra = args.run_args[1:] if args.run_args[:1] == ["--"] else args.run_args
    problem = problem_file(args.problem)
    (args.out / "runs").mkdir(parents=True, exist_ok=True)
    candidates = []
    for k in range(args.copies):
        path = args.out / f"aa_{problem.stem}" / f"aa{k}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(aa_source(problem, args.repeat))
        candidates.append(path)
    name = "AA" if args.repeat == 1 else f"AA_REPEATED_{args.repeat}X"
    command = shlex.join(["python", "run.py", "--problem", args.problem, "--solution", name, *extra]) + \
        (f" (AA x {args.copies} per run)" if args.copies > 1 else "") + f", {args.runs} runs"
    jsonl = args.out / "aa-coverage.jsonl"
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()] if jsonl.exists() else []
    done = {r["run"] for r in rows}
    for index in range(args.runs):
        if index in done:
            continue
        try:
            new = one_run(index, problem, candidates, args.out, extra, args.timeout, 1.0 if args.repeat == 1 else None)
        except subprocess.TimeoutExpired:
            new = [{"run": index, "exit": "timeout", "verdict": "no_result"}]
        with open(jsonl, "a") as f:
            for row in new:
                f.write(json.dumps(row) + "\n")
        rows += new
        print(f"run {index}: " + "; ".join(f"{r['verdict']} {r.get('speedup') or ''}" for r in new), flush=True)
        (args.out / "aa-coverage.md").write_text(report(rows, command))
    print(report(rows, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
