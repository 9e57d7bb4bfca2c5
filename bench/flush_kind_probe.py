#!/usr/bin/env python3
"""Does the kind of cache flush set a microsecond call's per-process offset (issue 60)? A graph-timed sample is
(calls window - flushes window) / batch, each call behind a flush. The harness's flush writes a 2 x L2 buffer
(`write`), which leaves the L2 full of dirty lines that the timed call's own reads must write back, in an amount that
may hang on where the buffer and the inputs lie (moving either moved a 2 us ReLU by 2-17% in one process, session 57).
A flush that reads the buffer (`read`) leaves clean lines behind; `hot` times with no flush at all, for scale.

For each kind, `--processes` fresh processes each time a ReLU of KernelBench v0's size with harness.worker.timing.Timer as a
worker does (median of `--samples` samples), then move its flush buffer and input behind a pad of random size
`--placements` times. Per kind: the spread of the processes' first medians (the process offset) and of the medians
within a process (placement), and the median per call (a read flush that evicts should cost the call what the write
flush does, more than `hot`). With several GPUs the kinds run side by side, one GPU each.

    python3 bench/flush_kind_probe.py --processes 8 --placements 4 > flush-kind.txt
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from flush_placement_probe import spread_pct  # noqa: E402  (the same (max - min) / median)

KINDS = ("write", "read", "hot")


def one_process(kind: str, placements: int, samples: int, size: tuple) -> dict:
    """This process's medians (us per call) with a flush of `kind`: {"first": m, "moved": [m per placement]}."""
    import torch

    from harness.common.methods import cuda_graph
    from harness.worker import timing

    device = torch.device("cuda:0")
    rng = random.Random()
    timer = timing.Timer(device, cold_cache=kind != "hot", lead_us=100.0)
    if kind == "read":  # a reduction over the buffer: every line read into the L2, none left dirty
        timer.flush = lambda: torch.amax(timer.flush_buffer.view(torch.int32))
    holder = {"x": torch.randn(*size, device=device)}
    timer.prepare(lambda: torch.relu(holder["x"]), 3, inputs=[holder["x"]])
    assert timer.method == "cuda_graph", timer.method

    def median_us() -> float:
        return 1000 * statistics.median(timer.sample()[0] for _ in range(samples))

    out = {"kind": kind, "batch": timer.batch, "first": median_us(), "moved": []}
    pads = []
    for _ in range(placements):
        pads.append(torch.empty(rng.randrange(1, 512) << 20, dtype=torch.uint8, device=device))
        timer.place_flush_buffer()
        holder["x"] = holder["x"].clone()
        cuda_graph.capture_both(timer)
        out["moved"].append(median_us())
    return out


def run_kind(kind: str, gpu: str, args) -> list:
    """`args.processes` fresh processes of one kind, one after another on `gpu`."""
    runs = []
    for index in range(args.processes):
        child = subprocess.run([sys.executable, __file__, "--child", kind, "--placements", str(args.placements),
                                "--samples", str(args.samples), "--size", *map(str, args.size)],
                               capture_output=True, text=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": gpu})
        if child.returncode:
            sys.exit(f"{kind} process {index} failed:\n{child.stderr[-2000:]}")
        runs.append(json.loads(child.stdout.strip().splitlines()[-1]))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--placements", type=int, default=4)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--size", type=int, nargs=2, default=(16, 16384))
    parser.add_argument("--child", choices=KINDS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_process(args.child, args.placements, args.samples, tuple(args.size))), flush=True)
        return
    import torch

    gpus = [str(i) for i in range(torch.cuda.device_count())]
    from concurrent.futures import ThreadPoolExecutor

    def on_gpu(gpu: int) -> dict:  # the kinds of one GPU one after another: never two processes on a GPU at once
        return {kind: run_kind(kind, gpus[gpu], args) for kind in KINDS[gpu::len(gpus)]}

    with ThreadPoolExecutor(len(gpus)) as pool:
        per_gpu = list(pool.map(on_gpu, range(min(len(gpus), len(KINDS)))))
    results = {kind: runs for one in per_gpu for kind, runs in one.items()}
    print(f"GPUs: {len(gpus)} ({torch.cuda.get_device_name(0)}); size {args.size}; {args.samples} samples a median")
    for kind, runs in results.items():
        firsts = [r["first"] for r in runs]
        print(f"{kind:5} batch {runs[0]['batch']:3}: first medians {' '.join(f'{m:.3f}' for m in firsts)} us "
              f"(processes spread {spread_pct(firsts):.1f}%); moved within a process spread "
              f"{statistics.median(spread_pct([r['first'], *r['moved']]) for r in runs):.1f}% (median over processes); "
              f"median per call {statistics.median(firsts):.3f} us", flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
