#!/usr/bin/env python3
"""What differs between two processes running the same model (issue 60)? Fresh processes, one after another, each
builds a problem's Model under seed 42 and times it as the harness does (cold L2, a lead spin, CUDA events); each
also profiles one call (kernel names and times) and notes where its tensors lie. Then, in the same process, the
model and inputs are copied to fresh allocations (the cache emptied, a pad of random size held first) and timed
again: a process whose time moves with the copy has a placement effect; one whose kernels differ from another
process's has an algorithm choice; one whose time holds through the copy while other processes differ has a state of
the process itself.

    python3 bench/process_offset_probe.py PROBLEM.py [PROBLEM.py ...] --processes 8 --calls 15 > probe.jsonl
    python3 bench/process_offset_probe.py --table probe.jsonl
"""
from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections import defaultdict


def load(path: str):
    spec = importlib.util.spec_from_file_location("problem", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(torch, model, inputs, calls: int, flush) -> float:
    """Median ms of `calls` calls, each after an L2 flush and a 100 us spin (as harness.worker.timing times one call)."""
    times = []
    with torch.no_grad():
        for _ in range(calls):
            flush.add_(1)
            torch.cuda.synchronize()
            torch.cuda._sleep(200_000)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*inputs)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def kernels(torch, model, inputs) -> list:
    """[name, us] of one profiled call's CUDA kernels."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
        model(*inputs)
        torch.cuda.synchronize()
    return [[e.name[:120], round(getattr(e, "device_time", None) or getattr(e, "cuda_time", 0.0), 1)]
            for e in prof.events() if e.device_type.name == "CUDA"]


def one_process(path: str, calls: int, pad_seed: int) -> dict:
    """The child's measurement: the first placement, then a fresh one in the same process."""
    import torch
    problem = load(path)
    torch.manual_seed(42)
    model = problem.Model(*problem.get_init_inputs()).cuda()
    torch.manual_seed(1)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    with torch.no_grad():
        out = model(*inputs)
    first = {"ms": timed(torch, model, inputs, calls, flush), "kernels": kernels(torch, model, inputs),
             "input_ptr_mod_2m": [x.data_ptr() % (2 << 20) for x in inputs if isinstance(x, torch.Tensor)],
             "weight_ptr_mod_2m": [p.data_ptr() % (2 << 20) for p in model.parameters()][:4],
             "output_ptr_mod_2m": out.data_ptr() % (2 << 20) if isinstance(out, torch.Tensor) else None,
             "reserved_mb": round(torch.cuda.memory_reserved() / 2**20)}
    del out
    pad = torch.empty(random.Random(pad_seed).randrange(1 << 20, 4 << 30, 1 << 20), dtype=torch.uint8, device="cuda")
    moved = copy.deepcopy(model)
    moved_inputs = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    del model, inputs
    torch.cuda.empty_cache()
    with torch.no_grad():
        moved(*moved_inputs)
    second = {"ms": timed(torch, moved, moved_inputs, calls, flush), "kernels": kernels(torch, moved, moved_inputs),
              "pad_mb": pad.numel() >> 20}
    return {"problem": os.path.basename(path), "pid": os.getpid(), "first": first, "moved": second,
            "cudnn": torch.backends.cudnn.version(), "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name()}


def table(path: str) -> None:
    """Per problem: each process's two times, and whether its kernels match the first process's."""
    rows = defaultdict(list)
    for line in open(path):
        if line.strip():
            record = json.loads(line)
            if "first" in record:
                rows[record["problem"]].append(record)
    for problem, records in rows.items():
        base = [k[0] for k in records[0]["first"]["kernels"]]
        fastest = min(r["first"]["ms"] for r in records)
        print(f"{problem}: {len(records)} processes, {records[0]['gpu']}, cuDNN {records[0]['cudnn']}")
        for r in records:
            names = [k[0] for k in r["first"]["kernels"]]
            moved_names = [k[0] for k in r["moved"]["kernels"]]
            print(f"  pid {r['pid']}: {r['first']['ms']:.3f} ms ({r['first']['ms'] / fastest:.3f}), moved "
                  f"{r['moved']['ms']:.3f} ms; kernels {'same' if names == base else 'DIFFER'} as process 1, "
                  f"moved {'same' if moved_names == names else 'DIFFER'}; reserved {r['first']['reserved_mb']} MB")
            if names != base:
                print("    " + "; ".join(f"{n} {t}us" for n, t in r["first"]["kernels"][:6]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problems", nargs="*")
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--table", default=None, help="print the table of a probe's JSONL")
    args = parser.parse_args()
    if args.table:
        return table(args.table)
    if args.child is not None:
        print(json.dumps(one_process(args.problems[0], args.calls, args.child)), flush=True)
        return
    for path in args.problems:
        for i in range(args.processes):
            started = time.monotonic()
            done = subprocess.run([sys.executable, __file__, path, "--calls", str(args.calls), "--child", str(i)],
                                  capture_output=True, text=True, timeout=300)
            line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
            if done.returncode or not line.startswith("{"):
                print(json.dumps({"problem": os.path.basename(path), "error": done.stderr[-500:]}), flush=True)
                continue
            record = json.loads(line)
            record["process_s"] = round(time.monotonic() - started, 1)
            print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
