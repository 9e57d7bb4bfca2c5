"""Does a kernel's time depend on where its tensors lie in GPU memory? One process, one model, several copies of
the same inputs (each its own allocation), timed interleaved with CUDA events after a cache flush; per copy the
median. A spread between copies of one process is a placement effect that two worker processes of an A/A pair
(each with its own copy) would show as a persistent speedup. With --models each copy also has its own copy of the
model's weights (moved with the inputs when --slack-mb is given); --pad-mb holds an allocation of random size during
each call, so that the call's intermediates land elsewhere; host_ms is the time to launch one call (a call whose
launches take as long as its GPU time is bound by the host).

    python3 bench/placement_probe.py PROBLEM_FILE [--copies 4] [--rounds 30] [--slack-mb 0] [--models] [--pad-mb 0]
                                     [--fixed-pad] [--lead-us 100] [--set NAME=VALUE ...]
"""
from __future__ import annotations

import argparse
import ast
import copy
import importlib.util
import json
import random
import statistics
import time

import torch


def load(path: str):
    spec = importlib.util.spec_from_file_location("problem", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("problem")
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--slack-mb", type=int, default=0,
                        help="each copy lies in a slab this much larger, at a random 4 KiB-aligned offset each round")
    parser.add_argument("--models", action="store_true", help="each copy with its own copy of the model's weights")
    parser.add_argument("--pad-mb", type=int, default=0,
                        help="hold an allocation of a random size up to this during each call (moves intermediates)")
    parser.add_argument("--fixed-pad", action="store_true",
                        help="each copy's pad keeps one random size for the whole run (as a process's allocation history)")
    parser.add_argument("--lead-us", type=int, default=100,
                        help="GPU spin before each call's start event (long enough, the host queues the whole call first)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a size constant of the problem (as run.py --set)")
    args = parser.parse_args()
    # Exact float32 (the harness itself now keeps torch's defaults: cuDNN's TF32 on).
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    problem = load(args.problem)
    for item in args.set:
        name, value = item.split("=", 1)
        setattr(problem, name, ast.literal_eval(value))
    torch.manual_seed(42)
    model = problem.Model(*problem.get_init_inputs()).cuda().eval()  # as the harness times it
    torch.manual_seed(0)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    slack = args.slack_mb << 20
    models = [copy.deepcopy(model) for _ in range(args.copies)] if args.models else [model] * args.copies
    weights = [list(m.parameters()) + list(m.buffers()) if args.models else [] for m in models]
    slabs = [[torch.empty(x.numel() * x.element_size() + slack, dtype=torch.uint8, device="cuda")
              if isinstance(x, torch.Tensor) else None for x in inputs + [w.data for w in ws]] for ws in weights]
    rng = random.Random(1)
    fixed_pads = [rng.randrange(0, (args.pad_mb << 20) + 1, 4096) for _ in range(args.copies)]

    def placed(slab, x):
        """x's contents at a random 4 KiB-aligned offset in slab."""
        offset = rng.randrange(0, slack + 1, 4096) if slack else 0
        view = slab[offset:offset + x.numel() * x.element_size()].view(x.dtype).view(x.shape)
        view.copy_(x)
        return view

    def place(i):
        """Copy i's inputs (returned) and weights (moved in place) at new offsets in their slabs."""
        values = [placed(s, x) if s is not None else x for s, x in zip(slabs[i], inputs + [w.data for w in weights[i]])]
        for w, value in zip(weights[i], values[len(inputs):]):
            w.data = value
        return values[:len(inputs)]

    copies = [place(i) for i in range(args.copies)]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    times, host = [[] for _ in copies], []
    with torch.no_grad():
        for i, c in enumerate(copies):
            models[i](*c)
        for r in range(args.rounds):
            order = list(range(len(copies)))
            order = order[r % len(order):] + order[:r % len(order)]
            if slack:
                copies = [place(i) for i in range(args.copies)]
            for i in order:
                size = fixed_pads[i] if args.fixed_pad else rng.randrange(0, (args.pad_mb << 20) + 1, 4096)
                pad = torch.empty(size, dtype=torch.uint8, device="cuda") if args.pad_mb else None
                flush.add_(1)
                torch.cuda.synchronize()
                torch.cuda._sleep(args.lead_us * 2000)
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                launched = time.perf_counter()
                models[i](*copies[i])
                host.append((time.perf_counter() - launched) * 1e3)
                end.record()
                torch.cuda.synchronize()
                times[i].append(start.elapsed_time(end))
                del pad
    medians = [statistics.median(t) for t in times]
    base = medians[0]
    print(json.dumps({"problem": args.problem.split("/")[-1], "sizes": args.set, "slack_mb": args.slack_mb,
                      "models": args.models, "pad_mb": args.pad_mb, "fixed_pad": args.fixed_pad, "lead_us": args.lead_us,
                      "host_ms": round(statistics.median(host), 4),
                      "spread_pct": round(100 * statistics.median(statistics.pstdev(t) / statistics.median(t)
                                                                  for t in times), 2),
                      "median_ms": [round(m, 4) for m in medians],
                      "relative": [round(m / base, 4) for m in medians],
                      "addresses": [hex(c[0].data_ptr()) for c in copies if isinstance(c[0], torch.Tensor)]}))


if __name__ == "__main__":
    main()
