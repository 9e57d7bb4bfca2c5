#!/usr/bin/env python3
"""The harness's own GPU memory, measured (issue 37): run.py under an NVML sampler, with each judge's memory history
recorded (HARNESS_MEMORY_HISTORY), optionally with the GPU capped for the harness by a held block.

  python3 bench/memory_footprint.py --out DIR [--cap-gib N] -- RUN.PY ARGS...

writes DIR/summary.json and DIR/summary.md: per pair its status, each process's peak (the results' peak_mem_mb) as a
multiple of the problem's inputs + output (meta device), the blocks the judge held at its peak of allocated memory, each
named by the harness function that allocated it, and, from NVML, the most GPU memory all the run's processes held at
once (judges started ahead included) and each process's own most.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class Sampler(threading.Thread):
    """Every `every_s`: the GPU's used memory beyond what was used when it started (the run's processes, all of them:
    NVML's per-process figures count a CUDA IPC mapping in both processes), and each process's own (NVML)."""

    def __init__(self, every_s: float = 0.05):
        super().__init__(daemon=True)
        import pynvml

        pynvml.nvmlInit()
        self.nvml, self.handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
        self.baseline = self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used
        self.every_s = every_s
        self.total_peak, self.per_process, self.names = 0, {}, {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            try:
                used = self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used
                processes = self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle)
            except Exception:
                used, processes = self.baseline, []
            self.total_peak = max(self.total_peak, used - self.baseline)
            for p in processes:
                if p.usedGpuMemory is None:
                    continue
                self.per_process[p.pid] = max(self.per_process.get(p.pid, 0), p.usedGpuMemory)
                if p.pid not in self.names:
                    self.names[p.pid] = process_name(p.pid)
            time.sleep(self.every_s)


def process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
    except OSError:
        return "?"


def hold_gpu_memory(cap_gib: float):
    """A process holding all but cap_gib of GPU 0 (bench/hold_gpu.py): the harness's processes see a smaller card.
    Returns the process (kill it at the end) and the bytes it holds."""
    first_gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
    holder = subprocess.Popen([sys.executable, str(Path(__file__).with_name("hold_gpu.py")), "--gib", str(cap_gib)],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": first_gpu})
    line = holder.stdout.readline()
    if not line.startswith("held"):
        raise SystemExit(f"the holder failed: {line!r}")
    return holder, int(line.split()[1])


def peak_blocks(snapshot_path: Path) -> dict:
    """From a memory-history snapshot: the peak of allocated and of reserved memory, and the blocks live at the peak
    of allocated memory, each named by the innermost harness frame that allocated it."""
    snapshot = pickle.loads(snapshot_path.read_bytes())
    events = [e for trace in snapshot.get("device_traces", []) for e in trace]
    live, allocated, reserved = {}, 0, 0
    peak_allocated, peak_reserved, at_peak = 0, 0, {}
    for event in events:
        action, size = event["action"], event.get("size", 0)
        if action == "alloc":
            live[event["addr"]] = (size, event.get("frames", []))
            allocated += size
            if allocated > peak_allocated:
                peak_allocated, at_peak = allocated, dict(live)
        elif action == "free_completed":
            if live.pop(event["addr"], None) is not None:
                allocated -= size
        elif action == "segment_alloc":
            reserved += size
            peak_reserved = max(peak_reserved, reserved)
        elif action == "segment_free":
            reserved -= size
    named = {}
    for size, frames in at_peak.values():
        where = next((f"{Path(f['filename']).name}:{f['name']}:{f['line']}" for f in frames
                      if "/harness/" in f.get("filename", "")), "unattributed")
        named[where] = named.get(where, 0) + size
    return {"peak_allocated": peak_allocated, "peak_reserved": peak_reserved, "events": len(events),
            "blocks_at_peak": dict(sorted(named.items(), key=lambda kv: -kv[1]))}


def problem_bytes(record: dict, overrides: dict) -> int:
    """Inputs + output of the record's problem (meta device), 0 when it cannot be sized."""
    from harness.common import problem_info
    from harness.common.load import load_module

    path = record.get("problem_path")
    try:
        size = problem_info.sizes(load_module(Path(path).read_text(), path, "problem_module", overrides))
    except Exception:
        size = None
    return size.inputs + size.outputs if size else 0


def overrides_of(args: list) -> dict:
    """The run's --set overrides."""
    from harness.common.discover import parse_set

    return parse_set([args[i + 1] for i, a in enumerate(args[:-1]) if a == "--set"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--cap-gib", type=float, default=None, help="hold all but this much of GPU 0")
    parser.add_argument("--timeout", type=float, default=540)
    parser.add_argument("run_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    run_args = [a for a in args.run_args if a != "--"]
    args.out.mkdir(parents=True, exist_ok=True)
    holder, held = (hold_gpu_memory(args.cap_gib) if args.cap_gib else (None, 0))
    sampler = Sampler()
    sampler.start()
    started = time.monotonic()
    env = {**os.environ, "HARNESS_MEMORY_HISTORY": str(args.out / "history")}
    proc = subprocess.run([sys.executable, "run.py", *run_args, "--out", str(args.out / "run")], cwd=ROOT, env=env,
                          timeout=args.timeout)
    wall = time.monotonic() - started
    sampler.done.set()
    sampler.join()
    if holder:
        holder.kill()
    overrides = overrides_of(run_args)
    pairs = []
    results = args.out / "run" / "results.jsonl"
    for line in (results.read_text().splitlines() if results.exists() else []):
        record = json.loads(line)
        size = problem_bytes(record, overrides)
        peaks = record.get("peak_mem_mb") or {}
        pair = {"problem": record["problem"], "solution": record["solution"], "status": record["status"],
                "speedup": record.get("speedup"), "error": (record.get("error") or "")[:300],
                "wall_s": round(sum((record.get("phases_s") or {}).get(k, 0) for k in
                                    ("reference", "build", "workers", "correctness", "timing_setup", "timing")), 1),
                "inputs_plus_output_mb": round(size / 2**20, 1), "peak_mem_mb": peaks,
                "peak_x": {k: round(v * 2**20 / size, 2) for k, v in peaks.items() if v and size}}
        history = args.out / "history" / f"{record['problem']}__{record['solution']}.pickle"
        if history.exists():
            blocks = peak_blocks(history)
            blocks["blocks_at_peak_mb"] = {k: round(v / 2**20, 1) for k, v in blocks.pop("blocks_at_peak").items()}
            pair["judge_history"] = blocks
        pairs.append(pair)
    harness_mb = None
    if len(pairs) == 1 and (pairs[0]["peak_mem_mb"] or {}).get("worker"):
        # One pair: the GPU's used memory at its most, less the candidate's own (its worker's peak beyond its copy of
        # the inputs): the whole harness, judges started ahead and every process's CUDA context included.
        record = json.loads(results.read_text().splitlines()[0])
        from harness.judge import footprint
        from harness.common import problem_info
        from harness.common.load import load_module
        size = problem_info.sizes(load_module(Path(record["problem_path"]).read_text(), record["problem_path"],
                                              "problem_module", overrides))
        own = pairs[0]["peak_mem_mb"]["worker"] - footprint.candidate_share(size) / 2**20
        harness_mb = round(sampler.total_peak / 2**20 - own, 1)
    summary = {"command": ["python", "run.py", *run_args], "exit": proc.returncode, "wall_s": round(wall, 1),
               "harness_at_once_mb": harness_mb,
               "harness_at_once_x": round(harness_mb / pairs[0]["inputs_plus_output_mb"], 2) if harness_mb else None,
               "cap_gib": args.cap_gib, "held_by_cap_mb": round(held / 2**20), "pairs": pairs,
               "nvml_total_peak_mb": round(sampler.total_peak / 2**20, 1),
               "nvml_per_process_peak_mb": {f"{pid} {sampler.names.get(pid, '?')}": round(v / 2**20, 1)
                                            for pid, v in sorted(sampler.per_process.items())}}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    lines = [f"# GPU memory: {' '.join(summary['command'])}", "",
             f"exit {proc.returncode}, {wall:.0f} s; cap {args.cap_gib} GiB; the most all the run's processes held at "
             f"once (NVML, the GPU's used memory beyond its use before the run): {summary['nvml_total_peak_mb']:.0f} MB"
             + (f" = {summary['nvml_total_peak_mb'] / pairs[0]['inputs_plus_output_mb']:.2f} x (inputs + output)"
                if pairs and pairs[0]["inputs_plus_output_mb"] else "") + (f"; the harness's part (less the candidate's own): {harness_mb:.0f} MB = {summary['harness_at_once_x']} x"
                if harness_mb else ""), "",
             "| problem | solution | status | speedup | in+out MB | judge | ref worker | cand worker | x (in+out) |",
             "|---|---|---|---|---:|---:|---:|---:|---|"]
    for p in pairs:
        m = p["peak_mem_mb"]
        lines.append(f"| {p['problem']} | {p['solution']} | {p['status']} | {p['speedup']} | {p['inputs_plus_output_mb']} "
                     f"| {m.get('judge')} | {m.get('reference_worker')} | {m.get('worker')} | {p['peak_x']} |")
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
