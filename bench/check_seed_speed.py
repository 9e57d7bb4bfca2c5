"""Cross-check of the harness: time a candidate and the reference in one plain process with CUDA events.

Usage: python3 bench/check_seed_speed.py solutions/sigmoid/seed001_fast_math.py [problem]
Prints the median of 20 back-to-back calls per side (no cold cache), for comparison with the harness.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.common import discover
from harness.common.load import load_module  # noqa: E402
from cuda_clock import median_ms  # noqa: E402  (bench/ is the script's folder)


def main(candidate, problem="sigmoid"):
    prob = load_module(Path(f"problems/{problem}.py").read_text(), f"problems/{problem}.py", "p")
    cand = load_module(discover.read_source(Path(candidate)), candidate, "c")
    torch.manual_seed(0)
    with torch.device("cuda"):
        ref = prob.Model(*prob.get_init_inputs()).eval()
        new = cand.ModelNew(*prob.get_init_inputs()).cuda().eval()
        inputs = prob.get_inputs()
    with torch.no_grad():
        r, n = median_ms(lambda: ref(*inputs)), median_ms(lambda: new(*inputs))
    print(f"{problem} {Path(candidate).stem}: ref {r:.3f} ms, new {n:.3f} ms, speedup {r / n:.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
