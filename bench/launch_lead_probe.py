"""Probe for issue 16's microsecond regime: does the host's launch latency leak into batched GPU samples, and does
a process's CPU set its speed?

    python3 bench/launch_lead_probe.py --out FILE.jsonl [--processes 4]

Part 1 (`cpu`): a 2M-step Python loop in a process pinned to each CPU in turn, and in unpinned processes: is the
speed a CPU's or a process's?
Part 2 (`lead`): in several fresh processes, the harness's batched sample of a ~20 us sigmoid (a graph of k x
(flush, call) minus a graph of k flushes, A B B A) with a GPU spin of LEAD us queued before each window's start
event, so that the host's launch of the window's work is over before the GPU reaches it. If the host's launch
latency leaks into the samples, processes disagree without the lead and agree with it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

LOOP = "import time; t=time.perf_counter(); s=0\nfor i in range(2_000_000): s+=i\nprint(time.perf_counter()-t)"


def loop_seconds(cpu=None) -> float:
    pre = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    out = subprocess.run([sys.executable, "-c", LOOP], capture_output=True, text=True, preexec_fn=pre, check=True)
    return float(out.stdout)


def cpu_part(write) -> None:
    for cpu in sorted(os.sched_getaffinity(0)):
        write({"part": "cpu", "cpu": cpu, "loop_s": [round(loop_seconds(cpu), 3) for _ in range(3)]})
    write({"part": "cpu", "cpu": None, "loop_s": [round(loop_seconds(), 3) for _ in range(12)]})


def lead_child(leads: list, samples: int) -> None:
    """One process: per lead, the median batched per-call estimate and the host's time to launch each graph."""
    import statistics

    import torch

    x = torch.rand(2048, 3072, device="cuda")
    buf = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
    batch = 40
    out = [None]

    def capture(with_call):
        g, side = torch.cuda.CUDAGraph(), torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            buf.add_(1)
            torch.sigmoid(x)
        torch.cuda.current_stream().wait_stream(side)
        with torch.cuda.graph(g):
            for _ in range(batch):
                buf.add_(1)
                if with_call:
                    out[0] = torch.sigmoid(x)
        return g

    calls, flushes = capture(True), capture(False)
    torch.cuda.synchronize()

    def window(graph, lead_us):
        torch.cuda.synchronize()
        if lead_us:
            torch.cuda._sleep(int(lead_us * 2000))  # cycles: >= lead_us at up to 2 GHz
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter_ns()
        a.record()
        graph.replay()
        b.record()
        launch_us = (time.perf_counter_ns() - t0) / 1e3
        b.synchronize()
        return a.elapsed_time(b), launch_us

    result = {"pid": os.getpid(), "cpu_now": int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[36])}
    t = time.perf_counter()
    s = 0
    for i in range(2_000_000):
        s += i
    result["loop_s"] = round(time.perf_counter() - t, 3)
    for lead in leads:
        per_call, launches = [], []
        for _ in range(samples):
            flushes.replay()
            (a1, l1), (b1, _), (b2, _), (a2, l2) = (window(g, lead) for g in (calls, flushes, flushes, calls))
            per_call.append((a1 + a2 - b1 - b2) / (2 * batch) * 1e3)
            launches += [l1, l2]
        result[f"lead{lead}_us"] = round(statistics.median(per_call), 3)
        result[f"lead{lead}_launch_us"] = round(statistics.median(launches), 1)
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--leads", default="0,20,50,100,200")
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    leads = [int(v) for v in args.leads.split(",")]
    if args.child:
        return lead_child(leads, args.samples)
    with open(args.out, "w") as out:
        def write(row):
            print(json.dumps(row), flush=True)
            out.write(json.dumps(row) + "\n")

        cpu_part(write)
        for _ in range(args.processes):
            child = subprocess.run([sys.executable, __file__, "--out", "-", "--child", "--leads", args.leads,
                                    "--samples", str(args.samples)], capture_output=True, text=True)
            write({"part": "lead", **json.loads(child.stdout)} if child.returncode == 0 else
                  {"part": "lead", "error": child.stderr[-2000:]})


if __name__ == "__main__":
    main()
