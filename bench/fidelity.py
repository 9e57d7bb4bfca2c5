"""Measure the harness itself on a GPU and write a markdown table (issue: measurement-grade timing).

  (a) torch.sigmoid on the full sigmoid problem against bytes / measured copy bandwidth;
  (b) a kernel of a few microseconds against torch.profiler's kernel time;
  (c) A/A runs (the reference as its own candidate) on three problems;
  (d) one candidate measured in three separate runs: the spread of its speedup.

Usage: python3 bench/fidelity.py --out bench/results/fidelity-h100.md
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AA_PROBLEMS = ["sigmoid", "hardsigmoid", "gemm_sigmoid_scaling_residualadd"]
SHORT = ["--set", "batch_size=16", "--set", "dim=4096"]  # 256 KiB: a sigmoid of a few microseconds


def aa_candidate(problem: str, folder: Path) -> Path:
    """The problem's own Model, offered as ModelNew."""
    path = folder / f"aa_{problem}.py"
    path.write_text((ROOT / "problems" / f"{problem}.py").read_text() + "\n\nModelNew = Model\n")
    return path


def judge(problem: str, solution: Path, out: Path, extra=()) -> tuple[dict, float]:
    """Run the harness on one pair; its result and the wall seconds it took."""
    start = time.monotonic()
    cmd = [sys.executable, "run.py", "--problem", problem, "--solution", str(solution), "--device", "cuda",
           "--out", str(out), *extra]
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
    (result,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return result, time.monotonic() - start


def profiler_kernel_us(numel: int) -> float:
    """torch.profiler's mean device time of the sigmoid kernel, each call after the same cache flush."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from harness.worker.timing import Timer

    x = torch.rand(numel, device="cuda")
    timer = Timer(torch.device("cuda"), cold_cache=True)
    for _ in range(10):
        timer.flush()
        torch.sigmoid(x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(200):
            timer.flush()
            torch.sigmoid(x)
        torch.cuda.synchronize()
    times = [e.device_time for e in prof.events() if "sigmoid" in e.name.lower() and e.device_time > 0]
    return sum(times) / len(times)


def bare_sigmoid_ms(shape: tuple, reps: int = 30) -> float:
    """Median ms of torch.sigmoid timed the plain way (one event pair per call after a flush), no harness."""
    import torch

    x = torch.rand(*shape, device="cuda")
    flush = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
    times = []
    for _ in range(reps + 3):
        flush.add_(1)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.sigmoid(x)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times[3:])[reps // 2]


def part_a(tmp: Path) -> tuple[list, float]:
    result, wall = judge("sigmoid", aa_candidate("sigmoid", tmp), tmp / "a")
    start = time.monotonic()
    bare = bare_sigmoid_ms((4096, 393216))
    ratio = result["ref_ms"] / result["floor_ms"]
    return [("a", "torch.sigmoid, 4096 x 393216 fp32", f"{result['ref_ms']:.4f} ms",
             f"floor {result['floor_ms']:.4f} ms (bytes / best copy BW)", f"{100 * (ratio - 1):+.2f}%",
             "within 2%", abs(ratio - 1) <= 0.02),
            ("a'", "the same, harness vs plain events in a bare process", f"{result['ref_ms']:.4f} ms",
             f"bare {bare:.4f} ms", f"{100 * (result['ref_ms'] / bare - 1):+.2f}%", "(harness error)",
             abs(result["ref_ms"] / bare - 1) <= 0.02)], wall + time.monotonic() - start


def part_b(tmp: Path) -> tuple[list, float]:
    result, wall = judge("sigmoid", aa_candidate("sigmoid", tmp), tmp / "b", SHORT)
    start = time.monotonic()
    prof_us = profiler_kernel_us(16 * 4096)
    ours_us = result["ref_ms"] * 1e3
    gap = ours_us - prof_us
    ok = abs(gap) <= max(0.1 * prof_us, 0.5)
    return [("b", f"torch.sigmoid, 16 x 4096 ({result['ref_timer']}, k={result['ref_batch']})", f"{ours_us:.2f} us",
             f"profiler {prof_us:.2f} us", f"{gap:+.2f} us ({100 * gap / prof_us:+.1f}%)",
             "within 10% or 0.5 us", ok)], wall + time.monotonic() - start


def part_c(tmp: Path) -> tuple[list, float]:
    rows, total = [], 0.0
    for problem in AA_PROBLEMS:
        result, wall = judge(problem, aa_candidate(problem, tmp), tmp / f"c-{problem}")
        total += wall
        s, lo, hi = result["speedup"], result["speedup_ci_low"], result["speedup_ci_high"]
        ok = 0.99 <= s <= 1.01 and lo <= 1.0 <= hi
        rows.append(("c", f"A/A {problem}", f"{s:.4f} [{lo:.4f}, {hi:.4f}]", f"{result['timing_rounds']} rounds",
                     "tie" if result["tie"] else "not a tie", "in [0.99, 1.01], CI holds 1", ok))
    return rows, total


def part_d(tmp: Path, candidate: Path) -> tuple[list, float]:
    speedups, sides, total = [], [], 0.0
    for run in range(3):
        result, wall = judge("sigmoid", candidate, tmp / f"d-{run}")
        speedups.append(result["speedup"])
        sm = (result.get("clocks") or {}).get("sm_mhz")
        sides.append(f"{result['ref_ms']:.3f}/{result['new_ms']:.3f} ms, SM {sm} MHz")
        total += wall
    spread = (max(speedups) - min(speedups)) / (sum(speedups) / 3)
    return [("d", f"{candidate.stem}, three runs", ", ".join(f"{s:.4f}" for s in speedups),
             "ref/new: " + "; ".join(sides), f"spread {100 * spread:.2f}%", "under 1%", spread < 0.01)], total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="markdown file to write")
    parser.add_argument("--candidate", default=str(ROOT / "solutions" / "sigmoid" / "seed001_fast_math.py"))
    parser.add_argument("--parts", default="abcd", help="which parts to run, e.g. b")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import torch

    rows, costs = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, part in [("a", part_a), ("b", part_b), ("c", part_c),
                           ("d", lambda t: part_d(t, Path(args.candidate)))]:
            if name not in args.parts:
                continue
            part_rows, costs[name] = part(tmp)
            rows += part_rows
            print(*part_rows, sep="\n", flush=True)
    lines = [f"# Harness fidelity on {torch.cuda.get_device_name()}", "",
             f"torch {torch.__version__}, CUDA {torch.version.cuda}; `python3 bench/fidelity.py`, "
             f"{time.strftime('%Y-%m-%d')}.", "",
             "| part | what | measured | against | gap | target | met |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]} | {'yes' if r[6] else 'NO'} |" for r in rows]
    lines += ["", "GPU wall time per part: " + ", ".join(f"({k}) {v:.0f} s" for k, v in costs.items()), ""]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
