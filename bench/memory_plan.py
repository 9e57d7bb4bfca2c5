#!/usr/bin/env python3
"""What the GPU pre-flight check (harness/footprint.pair_need) will say of every problem under a root, reckoned on the
meta device (no GPU needed): how many are judged and how many skipped on cards of a given free memory.

  python3 bench/memory_plan.py KERNELBENCH_ROOT [--free-gib 74 36 20.5]

(Free memory: a card's total less the CUDA contexts of a run's processes, ~0.6 GiB each; the H100's 80 GB shows
~79 GiB, and a run of two judges started ahead holds nine contexts.)"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.judge import footprint
from harness.common import problem_info
from harness.common.load import load_module  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--free-gib", type=float, nargs="+", default=[74.0, 36.0, 20.5])
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    for path in sorted(args.root.glob("level[123]/*.py")):
        try:
            size = problem_info.sizes(load_module(path.read_text(), str(path), "problem_module", {}))
        except Exception:
            size = None
        need = footprint.pair_need(size)[0] / 2**30 if size else None
        rows.append((path.parent.name, path.stem, size, need))
    print(f"{len(rows)} problems; not sizable on the meta device (run as they are): "
          + ", ".join(f"{lvl}/{name}" for lvl, name, size, _ in rows if size is None))
    print("\n| free GiB | judged | skipped | the skipped |\n|---:|---:|---:|---|")
    for free in args.free_gib:
        skipped = [f"{lvl}/{name} ({need:.0f})" for lvl, name, _, need in rows if need is not None and need > free]
        print(f"| {free:g} | {len(rows) - len(skipped)} | {len(skipped)} | {', '.join(skipped)} |")


if __name__ == "__main__":
    main()
