#!/usr/bin/env python3
"""Where does a graph-timed microsecond call's sample-to-sample spread come from (issue 60: KernelBench v0's 2-5 us
elementwise A/A pairs spread by 16-23% a sample, their speedups 0.94-1.06 after 200 rounds)? One process times a
ReLU of KernelBench v0's size (16 x 16384) with harness.worker.timing.Timer as the harness does (a graph's windows count no
synchronize tail) and with each window's tail counted, in the batch it chose and 4x and 16x larger; each variant
`--samples` samples, a pause between. Per variant: the median per call and its spread (1.4826 MAD, in us and %).
(Session 55 ran an earlier form of it, with allowances for the tail: results/gpu-acceptance/s55/.)

    python3 bench/tiny_noise_probe.py --samples 200 > tiny.txt
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from harness.common.methods import cuda_graph
from harness.worker import timing


def spread(values: list) -> float:
    middle = statistics.median(values)
    return 1.4826 * statistics.median(abs(v - middle) for v in values)


def variant(name: str, timer: timing.Timer, samples: int, gap_s: float) -> None:
    per_call = []
    for _ in range(samples):
        time.sleep(gap_s)  # the GPU idles between samples, as between the harness's requests
        per_call.append(timer.sample()[0] * 1000)
    middle = statistics.median(per_call)
    print(f"{name:30} batch {timer.batch:4} median {middle:7.3f} us  spread {spread(per_call):6.3f} us "
          f"({100 * spread(per_call) / middle:5.1f}%)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--gap-ms", type=float, default=20.0)
    parser.add_argument("--size", type=int, nargs=2, default=(16, 16384))
    args = parser.parse_args()
    device = torch.device("cuda:0")
    x = torch.randn(*args.size, device=device)
    fn = lambda: torch.relu(x)  # noqa: E731
    timer = timing.Timer(device, cold_cache=True, lead_us=100.0)
    print(torch.cuda.get_device_name(device), torch.__version__, "flush MiB", timer.flush_bytes() >> 20, flush=True)
    timer.prepare(fn, 3, inputs=[x])
    print("method", timer.method, "batch", timer.batch, "idle sync us", round(timer.idle_sync_ms * 1000, 2), flush=True)

    base, harness_rule = timer.batch, timer.counts_tail
    for factor in (1, 4, 16):
        if factor > 1:
            timer.batch = base * factor
            cuda_graph.capture_both(timer)
        timer.counts_tail = harness_rule
        variant(f"batch x{factor}, as the harness", timer, args.samples, args.gap_ms / 1000)
        timer.counts_tail = lambda: True  # each window's synchronize tail past an idle one's counted
        variant(f"batch x{factor}, tail counted", timer, args.samples, args.gap_ms / 1000)


if __name__ == "__main__":
    main()
