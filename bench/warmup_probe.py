"""Which part of a judge's start-up shows in another process's GPU probe, and how long each part takes.

    python bench/warmup_probe.py [--starts 3] > log

One process probes the GPU back to back (harness.judge.gpu_probe) and logs each probe that saw another context; fresh
processes meanwhile go through a judge's start-up steps one by one (import torch, CUDA context, the profiler's
first use), each step's start and end logged on the same clock (time.time)."""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = r'''
import json, sys, time
def mark(step): print(json.dumps({"step": step, "t": time.time()}), flush=True)
mark("python")
import torch
mark("import_torch")
from torch.utils.flop_counter import FlopCounterMode
with FlopCounterMode(display=False):
    torch.ones(2).sigmoid()
mark("flop_counter")
from torch.profiler import ProfilerActivity, profile
mark("import_profiler")
torch.cuda.init()
mark("cuda_init")
torch.cuda.set_device(0)
x = torch.ones(1, device="cuda")
torch.cuda.synchronize()
mark("cuda_context")
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
    x.add_(1)
    torch.cuda.synchronize()
mark("profiler")
'''


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import torch
    from harness.judge.gpu_probe import GpuProbe

    probe = GpuProbe(torch.device("cuda:0"), 3.0)
    for start in range(args.starts):
        proc = subprocess.Popen([sys.executable, "-c", STEPS], stdout=subprocess.PIPE, text=True)
        busy = []
        while proc.poll() is None:
            t = time.time()
            away = probe.other_work_ms()
            if away > 0:
                busy.append((round(t, 3), round(away, 2)))
        marks = [json.loads(line) for line in proc.stdout.read().splitlines() if line.startswith("{")]
        steps, last = [], marks[0]["t"]
        for m in marks:
            seen = [b for b in busy if last <= b[0] < m["t"]]
            steps.append({"step": m["step"], "s": round(m["t"] - last, 3), "busy_probes": len(seen),
                          "busy_ms": round(sum(b[1] for b in seen), 1)})
            last = m["t"]
        print(json.dumps({"start": start, "steps": steps, "busy_outside_steps": len(busy) - sum(s["busy_probes"] for s in steps)}), flush=True)
        time.sleep(1)


if __name__ == "__main__":
    main()
