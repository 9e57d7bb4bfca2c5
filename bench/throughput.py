"""How fast the harness gets through pairs on a GPU: wall time per pair with a cold and a warm build cache,
the GPU's busy fraction, and pairs per hour on one GPU and on two.

    python3 bench/throughput.py --out DIR [--parts cold,warm,scale] [--copies 8]

cold:  every candidate of the four seed problems at full size, with an empty build cache (DIR/build-cache);
warm:  the same again, the cache now full;
scale: COPIES identical copies of a correct sigmoid candidate (warm cache), with --devices 0, then 0,1.

Each part is one `run.py` invocation. While it runs, this script samples NVML's GPU utilization (the
share of time a kernel was running) every 0.1 s, and notes when each result line appears, so a pair's
time to result counts from the command's start (start-up and the build stage included).
Writes DIR/throughput.md (tables) and DIR/throughput.json.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = ["sigmoid", "hardsigmoid", "gemm_sigmoid_scaling_residualadd", "matmul_sigmoid_sum"]
PHASES = ["build_stage", "judge_start", "reference", "build", "workers",
          "correctness", "correctness.reference", "correctness.truth", "correctness.candidate", "correctness.checks",
          "correctness.release", "timing_setup", "timing_setup.prepare", "timing_setup.trace", "timing", "timing.refresh", "timing.checks", "finish"]
SCALE_CANDIDATE = ROOT / "solutions" / "sigmoid" / "seed001_fast_math.py"


class Sampler(threading.Thread):
    """GPU utilization of every visible GPU, and the time each new line of results.jsonl appeared."""

    def __init__(self, results: Path, period_s: float = 0.1):
        super().__init__(daemon=True)
        self.results, self.period_s = results, period_s
        self.started, self.stop = time.monotonic(), threading.Event()
        self.util = []  # per sample: [percent per GPU]
        self.line_times = []  # seconds from start at which line i of results.jsonl was first seen
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except Exception:  # no NVML (a CPU machine): utilization is not measured
            self.nvml, self.handles = None, []

    def run(self) -> None:
        while not self.stop.wait(self.period_s):
            if self.handles:
                self.util.append([self.nvml.nvmlDeviceGetUtilizationRates(h).gpu for h in self.handles])
            lines = self.results.read_text().count("\n") if self.results.exists() else 0
            self.line_times += [round(time.monotonic() - self.started, 2)] * (lines - len(self.line_times))

    def busy(self, gpus: list[int]) -> float | None:
        """Mean utilization (0-1) of the given GPUs over the run."""
        values = [sample[i] for sample in self.util for i in gpus if i < len(sample)]
        return round(statistics.mean(values) / 100, 3) if values else None


def run_part(name: str, args: list, out: Path, gpus: list[int]) -> dict:
    """One run.py invocation, timed and sampled; its summary and per-pair rows."""
    run_dir = out / name
    shutil.rmtree(run_dir, ignore_errors=True)
    sampler = Sampler(run_dir / "results.jsonl")
    sampler.start()
    started = time.monotonic()
    with open(out / f"{name}.log", "w") as log:
        proc = subprocess.run([sys.executable, "run.py", *args, "--out", str(run_dir)], cwd=ROOT,
                              stdout=log, stderr=subprocess.STDOUT)
    wall = time.monotonic() - started
    time.sleep(0.3)  # one more sample for lines written just before exit
    sampler.stop.set()
    sampler.join()
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    judged = [r for r in records if r["status"] != "skipped"]
    rows = [{"problem": r["problem"], "solution": r["solution"], "status": r["status"],
             "compile_s": r.get("compile_s"), "wall_s": r["wall_s"], "to_result_s": t,
             "rounds": r.get("timing_rounds"), "phases_s": r.get("phases_s") or {}}
            for r, t in zip(records, sampler.line_times + [None] * len(records))]
    # Steady state: pairs ended after the first wave (one pair per GPU), over the time they took.
    ends = sorted(t for t in sampler.line_times if t is not None)
    waves = len(gpus)
    steady = round(3600 * (len(ends) - waves) / (ends[-1] - ends[waves - 1]), 1) if len(ends) > waves + 1 else None
    return {"part": name, "exit": proc.returncode, "gpus": gpus, "pairs": len(records), "judged": len(judged),
            "run_wall_s": round(wall, 1), "pairs_per_hour": round(3600 * len(judged) / wall, 1),
            "steady_pairs_per_hour": steady,
            "gpu_busy": sampler.busy(gpus), "rows": rows}


def write_report(out: Path, parts: list[dict], device: str) -> None:
    """throughput.md: one table of runs, one of pairs per run."""
    lines = [f"# Throughput on {device}", "",
             "| part | GPUs | pairs (judged) | run wall s | judged pairs / hour | steady pairs / hour | GPU busy |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for p in parts:
        busy = "-" if p["gpu_busy"] is None else f"{100 * p['gpu_busy']:.0f}%"
        lines.append(f"| {p['part']} | {','.join(map(str, p['gpus']))} | {p['pairs']} ({p['judged']}) | "
                     f"{p['run_wall_s']} | {p['pairs_per_hour']} | {p['steady_pairs_per_hour'] or '-'} | {busy} |")
    scale = {p["part"]: p for p in parts}
    if "scale-1gpu" in scale and "scale-2gpu" in scale:
        one, two = scale["scale-1gpu"], scale["scale-2gpu"]
        lines += ["", f"Two GPUs / one GPU: **{two['pairs_per_hour'] / one['pairs_per_hour']:.2f}x** judged pairs per "
                  f"hour over the whole run (start-up included), "
                  f"**{(two['steady_pairs_per_hour'] or 0) / (one['steady_pairs_per_hour'] or 1):.2f}x** in the steady "
                  "state (pairs ended after the first one per GPU, over the time between)."]
    seen = {k for p in parts for r in p["rows"] for k in r["phases_s"]}
    phase_names = [k for k in PHASES if k in seen] + sorted(seen - set(PHASES))
    for p in parts:
        lines += ["", f"## {p['part']}", "",
                  "| problem | candidate | status | compile s | pair wall s | to result s | rounds | "
                  + " | ".join(phase_names) + " |",
                  "|---|---|---|---:|---:|---:|---:|" + "---:|" * len(phase_names)]
        for r in p["rows"]:
            phases = " | ".join(str(r["phases_s"].get(k, "")) for k in phase_names)
            lines.append(f"| {r['problem']} | {r['solution']} | {r['status']} | {r['compile_s']} | {r['wall_s']} | "
                         f"{r['to_result_s']} | {r['rounds'] or '-'} | {phases} |")
    (out / "throughput.md").write_text("\n".join(lines) + "\n")
    (out / "throughput.json").write_text(json.dumps({"device": device, "parts": parts}, indent=1) + "\n")


def gpu_names() -> list[str]:
    out = subprocess.run([sys.executable, "-c", "import torch; print('|'.join(torch.cuda.get_device_name(i) "
                          "for i in range(torch.cuda.device_count())))"], capture_output=True, text=True)
    return [n for n in out.stdout.strip().split("|") if n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--parts", default="cold,warm,scale")
    parser.add_argument("--problems", default=",".join(PROBLEMS), help="problems of the cold and warm parts")
    parser.add_argument("--copies", type=int, default=8, help="sigmoid candidates in the scale part")
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    gpus = gpu_names()
    if not gpus:
        sys.exit("throughput.py needs a CUDA GPU")
    cache = out / "build-cache"
    config = out / "bench.yaml"
    config.write_text(f"build_cache_dir: {cache}\n")
    common = ["--config", str(config), "--device", "cuda:0"]
    every_problem = [arg for name in args.problems.split(",") for arg in ("--problem", name)]
    parts = []
    wanted = args.parts.split(",")
    if "cold" in wanted:
        shutil.rmtree(cache, ignore_errors=True)
        parts.append(run_part("cold", [*every_problem, *common], out, [0]))
        print(json.dumps({k: v for k, v in parts[-1].items() if k != "rows"}), flush=True)
    if "warm" in wanted:
        parts.append(run_part("warm", [*every_problem, *common], out, [0]))
        print(json.dumps({k: v for k, v in parts[-1].items() if k != "rows"}), flush=True)
    if "scale" in wanted:
        copies = out / "copies"
        shutil.rmtree(copies, ignore_errors=True)
        copies.mkdir()
        for i in range(args.copies):
            shutil.copy(SCALE_CANDIDATE, copies / f"copy{i:02d}.py")
        solutions = [arg for p in sorted(copies.glob("*.py")) for arg in ("--solution", str(p))]
        if "cold" not in wanted and "warm" not in wanted:  # fill the build cache first, untimed
            run_part("scale-build", ["--problem", "sigmoid", *solutions[:2], *common], out, [0])
        parts.append(run_part("scale-1gpu", ["--problem", "sigmoid", *solutions, *common], out, [0]))
        print(json.dumps({k: v for k, v in parts[-1].items() if k != "rows"}), flush=True)
        if len(gpus) >= 2:
            two = ["--problem", "sigmoid", *solutions, "--config", str(config), "--devices", "0,1"]
            parts.append(run_part("scale-2gpu", two, out, [0, 1]))
            print(json.dumps({k: v for k, v in parts[-1].items() if k != "rows"}), flush=True)
    write_report(out, parts, f"{len(gpus)} x {gpus[0]}")
    print((out / "throughput.md").read_text())


if __name__ == "__main__":
    main()
