#!/usr/bin/env python3
"""Why does a graph-timed microsecond call spread by ~20% a sample in a 4-GPU sweep and ~2% on an idle host (issue
60)? The sample is (calls windows - flushes windows) / batch: ~21 x (flush + 2 us call) against ~21 flushes, each
window ~2 ms, so 10 us of noise in a window is 0.5 us (20%) a call. Two suspects:
  launch: the host takes longer than the window's lead spin (100 us) to launch the graph after the start event,
          and the GPU's idle wait is counted;
  device: the flushes' own time moves (HBM, clocks) from window to window.
One process times a ReLU of KernelBench v0's size (16 x 16384) as the harness does, recording each window's GPU time
and the host's time to launch its body; per lead spin (100 us, the harness's, to 2000 us) and late-launch retries
(cuda_graph.LATE_LAUNCH_RETRIES), under a load chosen by --load: none, cpu (a busy loop on every CPU but this one) or
gpus (a flush loop on every other GPU), or both. (Session 56: here launches took 7-24 us under every load, in the
harness's workers 120 us; a graph's windows now get methods.CUDA_GRAPH.min_lead_us of lead, which each variant sets to its own.)
Per variant: the sample's spread, each kind of window's spread (us), the launch time's median and 99th percentile,
and the share of windows whose launch outlasted the spin.

    python3 bench/window_noise_probe.py --load none|cpu|gpus|both > window-noise.txt
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from harness.common import methods  # noqa: E402
from harness.common.methods import cuda_graph  # noqa: E402
from harness.worker import timing  # noqa: E402
from tiny_noise_probe import spread  # noqa: E402  (1.4826 MAD, as that probe gives it)


class RecordingTimer(timing.Timer):
    """harness.worker.timing.Timer whose windows also note (GPU ms, host launch us)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.log = []

    def window(self, body, then=None):
        launched = []

        def timed_body():
            began = time.perf_counter_ns()
            out = body()
            launched.append((time.perf_counter_ns() - began) / 1e3)
            return out
        ms, wall = super().window(timed_body, then)
        self.log.append((body, ms, launched[0] if launched else 0.0))
        return ms, wall


GPU_HOG = """import torch, sys
buffer = torch.empty(1 << 30, dtype=torch.uint8, device=f"cuda:{sys.argv[1]}")
while True:
    for _ in range(50):
        buffer.add_(1)
    torch.cuda.synchronize()
"""


def variant(timer: RecordingTimer, lead_us: float, retries: int, samples: int, gap_s: float) -> None:
    timer.lead_us, timer.log = lead_us, []
    methods.METHODS["cuda_graph"] = dataclasses.replace(methods.CUDA_GRAPH, min_lead_us=lead_us)  # a graph's too
    cuda_graph.LATE_LAUNCH_RETRIES = retries
    per_call = []
    for _ in range(samples):
        time.sleep(gap_s)
        per_call.append(timer.sample()[0] * 1000)
    graph_calls = timer.graphs[0].replay
    calls = [(ms, us) for body, ms, us in timer.log if body == graph_calls]
    flushes = [(ms, us) for body, ms, us in timer.log if body != graph_calls]
    launches = sorted(us for _, _, us in timer.log)
    over = sum(us > lead_us for us in launches) / len(launches)
    middle = statistics.median(per_call)
    print(f"lead {lead_us:6.0f} us, {retries} retries: per call {middle:6.3f} us, spread {spread(per_call):6.3f} us "
          f"({100 * spread(per_call) / middle:5.1f}%); calls windows {spread([m for m, _ in calls]) * 1000:6.2f} us, "
          f"flushes windows {spread([m for m, _ in flushes]) * 1000:6.2f} us; launch median "
          f"{statistics.median(launches):6.1f} us, p99 {launches[int(0.99 * len(launches))]:7.1f} us, "
          f"over the spin {100 * over:4.1f}%", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--gap-ms", type=float, default=20.0)
    parser.add_argument("--load", choices=("none", "cpu", "gpus", "both"), default="none")
    args = parser.parse_args()
    own = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {own})
    hogs = []
    if args.load in ("cpu", "both"):  # a busy loop on each other CPU
        hogs += [subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", "while True: pass"])
                 for cpu in range(os.cpu_count()) if cpu != own]
    if args.load in ("gpus", "both"):  # each on a CPU of its own, not ours
        hogs += [subprocess.Popen(["taskset", "-c", str((own + i) % os.cpu_count()), sys.executable, "-c", GPU_HOG,
                                   str(i)]) for i in range(1, torch.cuda.device_count())]
    time.sleep(15 if hogs else 0)  # the GPU hogs import torch first
    device = torch.device("cuda:0")
    x = torch.randn(16, 16384, device=device)
    timer = RecordingTimer(device, cold_cache=True, lead_us=100.0)
    timer.prepare(lambda: torch.relu(x), 3, inputs=[x])
    print(torch.cuda.get_device_name(device), "load", args.load, f"({len(hogs)} hogs)", "method", timer.method,
          "batch", timer.batch, flush=True)
    for _ in range(2):
        for lead, retries in ((100.0, 0), (100.0, 3), (300.0, 3), (1000.0, 3), (2000.0, 3)):
            variant(timer, lead, retries, args.samples, args.gap_ms / 1000)
    for hog in hogs:
        hog.kill()


if __name__ == "__main__":
    main()
