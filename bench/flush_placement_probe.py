#!/usr/bin/env python3
"""Where does a microsecond call's per-process offset come from (issue 60)? Graph-timed 2-5 us calls of fresh worker
processes differ by up to 10% (v0 28_HardSigmoid's blocks 0.900, 1.057, 0.952, session 56), though each process's
samples spread by 1-2%. A sample is (calls window - flushes window) / batch with the flushes ~95% of each window, so a
small process-bound change in what a flush evicts, or costs, moves the call's time a lot. Suspects: where the flush
buffer lies (allocated once a process), where the inputs lie (fixed while a graph times them), neither (the process).

One process times a ReLU of KernelBench v0's size (16 x 16384) with harness.worker.timing.Timer as a worker does, then
re-places one thing at a time behind a pad of random size and captures the graphs again: `recapture` (nothing moved),
`flush` (a new flush buffer), `inputs` (a new input tensor). Per variant and placement: the median per call of
`--samples` samples. With `--processes N`, N fresh processes each do so; the spread of the processes' first medians is
the process offset to explain: the variant whose placements spread as much is its cause.

    python3 bench/flush_placement_probe.py --processes 4 --placements 6 > flush-placement.txt
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def one_process(placements: int, samples: int, size: tuple) -> dict:
    """This process's medians (us per call): {"first": m, variant: [m per placement]}."""
    import torch

    from harness.common.methods import cuda_graph
    from harness.worker import timing

    device = torch.device("cuda:0")
    rng = random.Random()
    x = torch.randn(*size, device=device)
    timer = timing.Timer(device, cold_cache=True, lead_us=100.0)
    holder = {"x": x}
    timer.prepare(lambda: torch.relu(holder["x"]), 3, inputs=[x])
    assert timer.method == "cuda_graph", timer.method

    def median_us() -> float:
        return 1000 * statistics.median(timer.sample()[0] for _ in range(samples))

    out = {"method": timer.method, "batch": timer.batch, "first": median_us()}
    pads = []
    for variant in ("recapture", "flush", "inputs"):
        medians = []
        for _ in range(placements):
            pads.append(torch.empty(rng.randrange(1, 512) << 20, dtype=torch.uint8, device=device))
            if variant == "flush":
                timer.flush_buffer = torch.empty_like(timer.flush_buffer)
            elif variant == "inputs":
                holder["x"] = holder["x"].clone()
            cuda_graph.capture_both(timer)
            medians.append(median_us())
        out[variant] = medians
    return out


def spread_pct(values: list) -> float:
    """(max - min) / median, in percent."""
    return 100 * (max(values) - min(values)) / statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--placements", type=int, default=6)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--size", type=int, nargs=2, default=(16, 16384))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_process(args.placements, args.samples, tuple(args.size))), flush=True)
        return
    runs = []
    for index in range(args.processes):
        child = subprocess.run([sys.executable, __file__, "--child", "--placements", str(args.placements),
                                "--samples", str(args.samples), "--size", *map(str, args.size)],
                               capture_output=True, text=True)
        if child.returncode:
            sys.exit(f"process {index} failed:\n{child.stderr[-2000:]}")
        run = json.loads(child.stdout.strip().splitlines()[-1])
        runs.append(run)
        print(f"process {index}: {run['method']} batch {run['batch']}, first {run['first']:.3f} us; "
              + "; ".join(f"{v} {' '.join(f'{m:.3f}' for m in run[v])} (spread {spread_pct(run[v]):.1f}%)"
                          for v in ("recapture", "flush", "inputs")), flush=True)
    if len(runs) > 1:
        print(f"processes' first medians spread {spread_pct([r['first'] for r in runs]):.1f}%; within a process, "
              "placements spread (median over processes): "
              + ", ".join(f"{v} {statistics.median(spread_pct(r[v]) for r in runs):.1f}%"
                          for v in ("recapture", "flush", "inputs")), flush=True)


if __name__ == "__main__":
    main()
