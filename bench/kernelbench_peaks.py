#!/usr/bin/env python3
"""KernelBench's own eval's GPU memory beside this harness's, for a sample of A/A pairs (issue 37): each sampled
problem's A/A candidate (from a kernelbench_aa.py sweep's DIR/candidates) through KernelBench's eval_kernel_against_ref
(`bench/realgen.py kb-one`, one process each: 5 correctness trials, 100 timed calls, as realgen runs it), beside the
sweep's `peak_mem_mb` of the judge and both workers (caching allocators' peaks, reserved; KernelBench's is one process).

  python3 bench/kernelbench_peaks.py KERNELBENCH_DIR SWEEP_DIR --out FILE.md [--every 25] [--skip N]

Needs KernelBench's eval in .corpus/kernelbench (bench/realgen.py prepare) and its wheels (bench/realgen_on_device.sh).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 180


def kernelbench_peak(problem: Path, candidate: Path) -> dict:
    """KernelBench's eval of one pair in a process of its own: its verdict and peaks, or why there are none."""
    try:
        done = subprocess.run([sys.executable, str(ROOT / "bench" / "realgen.py"), "kb-one", "--problem", str(problem),
                               "--candidate", str(candidate), "--backend", "cuda"],
                              capture_output=True, text=True, timeout=TIMEOUT_S, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"no result within {TIMEOUT_S} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:200]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernelbench_dir", type=Path)
    parser.add_argument("sweep_dir", type=Path, help="a kernelbench_aa.py --out folder (candidates/, run/)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--every", type=int, default=25)
    parser.add_argument("--skip", type=int, default=0, help="leave out the sample's first N problems (a call that "
                        "ran out of time goes on from where it stopped)")
    args = parser.parse_args()
    ours = {}
    for line in (args.sweep_dir / "run" / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        ours[record["solution"]] = record
    problems = sorted(args.kernelbench_dir.glob("level[123]/*.py"), key=lambda p: (p.parent.name, int(p.name.split("_")[0])))
    lines = ["| problem | ours: status | judge MB | reference worker MB | candidate worker MB | KernelBench: correct | "
             "its peak MB (allocated / reserved) | ours / its reserved |", "|---|---|---:|---:|---:|---|---|---:|"]
    rows = []
    for problem in problems[::args.every][args.skip:]:
        candidate = args.sweep_dir / "candidates" / f"{problem.parent.name}_{problem.name}"
        record = ours.get(candidate.stem)
        if record is None or not candidate.exists():
            continue
        theirs = kernelbench_peak(problem, candidate)
        peaks = record.get("peak_mem_mb") or {}
        ours_total = sum(v for v in peaks.values() if v)
        theirs_reserved = theirs.get("peak_reserved_mb")
        rows.append({"problem": f"{problem.parent.name}/{problem.stem}", "ours": peaks, "status": record["status"],
                     "kernelbench": theirs})
        ratio = f"{ours_total / theirs_reserved:.2f}" if theirs_reserved else "-"
        lines.append(f"| {problem.parent.name}/{problem.stem} | {record['status']} | {peaks.get('judge', '-')} | "
                     f"{peaks.get('reference_worker', '-')} | {peaks.get('worker', '-')} | "
                     f"{theirs.get('correct', theirs.get('error', '-'))} | {theirs.get('peak_mem_mb', '-')} / "
                     f"{theirs_reserved or '-'} | {ratio} |")
        print(lines[-1], flush=True)
        # Written after each row: a call the time limit cuts off keeps the rows it finished.
        args.out.write_text("\n".join(lines) + "\n")
        args.out.with_suffix(".jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
