#!/usr/bin/env python3
"""Hold all but N GiB of each visible GPU in this process until it is killed: the harness's processes then see a smaller
card (issue 37's capped runs: a 40 GiB or a 24 GiB card on an 80 GB H100). Prints `held BYTES` per GPU, then `ready`,
then sleeps.

  python3 bench/hold_gpu.py --gib 24 &      (CUDA_VISIBLE_DEVICES picks the GPUs)
"""
from __future__ import annotations

import argparse
import time

import torch


def hold(gib: float) -> list:
    """One block per visible GPU, sized so that `gib` of its total is left to others."""
    blocks = []
    for index in range(torch.cuda.device_count()):
        free, total = torch.cuda.mem_get_info(index)
        size = max(int(total - gib * 2**30) - (total - free), 0)
        blocks.append(torch.empty(size, dtype=torch.uint8, device=f"cuda:{index}"))
        print("held", size, flush=True)
    return blocks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, required=True, help="what is left of each GPU for the others")
    blocks = hold(parser.parse_args().gib)
    print("ready", flush=True)
    while blocks:
        time.sleep(3600)


if __name__ == "__main__":
    main()
