#!/usr/bin/env python3
"""Does an A/A pair's lean follow the worker's role (issue 60)? On the H200 the first block of today's KernelBench
level2 61_ came out 0.93 in 8 of 8 runs (the candidate's worker slower), whatever the run's secret. The harness's two
workers differ in what they did before timing: the candidate's ran the correctness trials (many calls, wide inputs),
the reference's timing worker one call; the reference's worker starts, and sets up its timing, first.

Two worker processes live side by side, as the harness's do, each with the problem's Model (seed 42) and its own
copy of the inputs. Before timing, one of them (`--trials` calls on fresh inputs, a quarter at 100x scale) may run
trials; then each empties its cache, copies its timing inputs, warms up, and answers `time` requests: a cold-cache,
event-timed call after a 100 us spin, as harness.worker.timing times one (median of `--windows`). The parent alternates
the two, every pair of rounds opened once by each. Per layout (which process starts first, which ran the trials): the
speedup of the second over the first (first's time / second's, as the harness's reference is the first and its
candidate the second), from the median of paired rounds' log ratios; each layout `--repeats` times, fresh processes.

    python3 bench/role_probe.py PROBLEM.py [...] --repeats 3 > role.txt
    python3 bench/role_probe.py tests/fixtures/problems/fx_relu.py --device cpu --rounds 4 --repeats 1   # smoke
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time

from process_offset_probe import load, timed  # as that probe times one call: cold L2, a spin, CUDA events

LAYOUTS = {  # (the first-started process's history, the second's)
    "both fresh": ("fresh", "fresh"),
    "first ran trials": ("trials", "fresh"),
    "second ran trials": ("fresh", "trials"),
    "both ran trials": ("trials", "trials"),
}


def worker(path: str, history: str, trials: int, windows: int, device: str) -> None:
    """A child: build, run its history, prepare, then time one call per `time` line on stdin (a JSON reply each)."""
    import torch
    problem = load(path)
    on = lambda xs: [x.to(device) if isinstance(x, torch.Tensor) else x for x in xs]  # noqa: E731
    torch.manual_seed(42)
    model = problem.Model(*problem.get_init_inputs()).to(device)
    cuda = device.startswith("cuda")
    with torch.no_grad():
        for trial in range(trials if history == "trials" else 1):
            torch.manual_seed(1000 + trial)
            inputs = on(problem.get_inputs())
            if trial % 4 == 3:
                inputs = [x * 100 if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
            model(*inputs)
        del inputs
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        torch.manual_seed(7)
        timing_inputs = [x.clone() if isinstance(x, torch.Tensor) else x for x in on(problem.get_inputs())]
        flush = torch.empty(256 << 20, dtype=torch.uint8, device=device)
        for _ in range(3):
            model(*timing_inputs)
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            if line.strip() != "time":
                break
            if cuda:
                ms = timed(torch, model, timing_inputs, windows, flush)
            else:
                times = []
                for _ in range(windows):
                    began = time.perf_counter()
                    model(*timing_inputs)
                    times.append((time.perf_counter() - began) * 1e3)
                ms = statistics.median(times)
            print(json.dumps({"ms": ms}), flush=True)


def start(path: str, history: str, args) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, __file__, path, "--child", history, "--trials", str(args.trials),
                             "--windows", str(args.windows), "--device", args.device],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    reply = json.loads(proc.stdout.readline())
    assert reply.get("ready"), reply
    return proc


def ask(proc: subprocess.Popen) -> float:
    proc.stdin.write("time\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())["ms"]


def one_layout(path: str, histories: tuple, args) -> float:
    """Fresh processes in this layout (the first started and ready before the second starts): the speedup of the second
    over the first (first's time / second's, as the harness's reference over its candidate)."""
    first = start(path, histories[0], args)
    second = start(path, histories[1], args)
    try:
        ratios = []
        for round_ in range(args.rounds):
            order = (first, second) if round_ % 4 in (0, 3) else (second, first)  # every two rounds, each opens once
            ms = {id(p): ask(p) for p in order}
            ratios.append(math.log(ms[id(first)] / ms[id(second)]))
        pairs = [(a + b) / 2 for a, b in zip(ratios[0::2], ratios[1::2])]
        return math.exp(statistics.median(pairs))
    finally:
        for proc in (first, second):
            proc.stdin.close()
            proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("problems", nargs="+")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--windows", type=int, default=5)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return worker(args.problems[0], args.child, args.trials, args.windows, args.device)
    for path in args.problems:
        for name, histories in LAYOUTS.items():
            speedups = [one_layout(path, histories, args) for _ in range(args.repeats)]
            print(f"{path.split('/')[-1][:40]:40} {name:18} speedup of the second: "
                  + " ".join(f"{s:.3f}" for s in speedups), flush=True)


if __name__ == "__main__":
    main()
