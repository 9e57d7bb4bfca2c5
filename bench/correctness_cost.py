"""What one correctness trial's steps cost on a GPU at KernelBench's elementwise size (4096 x 393216 float32, 6 GiB a
tensor): the checks (harness.common.check), a draw, and the round trip of handing cached blocks back and allocating again.
    python3 bench/correctness_cost.py [--elems N]
Prints milliseconds per step (median of 3)."""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.common import check


def timed(step, repeats: int = 3) -> float:
    """Median milliseconds of step(), synchronized."""
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elems", type=int, default=4096 * 393216)
    parser.add_argument("--chunk", type=int, default=1 << 24)
    n, chunk = parser.parse_args().elems, parser.parse_args().chunk
    torch.manual_seed(0)
    ref = torch.rand(n, device="cuda")
    new = ref + 1e-7
    truth = ref.clone()
    print(f"{torch.cuda.get_device_name()}, {n} elements ({n * 4 / 2**30:.1f} GiB a float32 tensor), chunk {chunk}")
    steps = {
        "compare": lambda: check.compare(ref, new, 1e-4, 1e-4, chunk),
        "truth_error (fast)": lambda: check.truth_error(new, truth, 1e-4, 1e-4, chunk),
        "truth_error (NaN/inf rule, float64)": lambda: check.special_truth_error(new, truth, 1e-4, 1e-4, chunk),
        "same_bits": lambda: check.same_bits(ref, new.clone()),
        "nan_count": lambda: check.nan_count(new),
        "draw (torch.rand)": lambda: torch.rand(n, device="cuda"),
        "upcast to float64": lambda: ref.double(),
    }
    for name, step in steps.items():
        print(f"{name:40s} {timed(step):8.1f} ms")

    def round_trip():
        x = torch.empty(n, device="cuda")
        del x
        torch.cuda.empty_cache()
    def cached():
        x = torch.empty(n, device="cuda")
        del x
    cached()
    print(f"{'allocate from the cache':40s} {timed(cached):8.1f} ms")
    print(f"{'cudaMalloc + hand back (empty_cache)':40s} {timed(round_trip):8.1f} ms")
    print(f"{'empty_cache with nothing cached':40s} {timed(torch.cuda.empty_cache):8.1f} ms")


if __name__ == "__main__":
    main()
