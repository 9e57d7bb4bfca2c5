"""Which part of the isolated judge makes GPU samples bimodal (issue 15)?

On the H100 the full-size relu/sigmoid call (6.4 GB, ~4.33 ms) sometimes measured ~5.0 ms, one window of a round
in two. This runs A/A pairs of that call with one part of the harness turned off at a time, through a
sitecustomize that patches the judge process (never the harness's own code), and logs every timing request:
side, order in its round, sample.

    python bench/bimodal_timing.py --out DIR [--variants base,nopause,...] [--pairs 2] [--rounds 24] [--shape 4096x393216]

Variants: base; nopause (workers never stopped); nooutbox (handover copies from the judge's own allocator);
noprobe (gpu_probe_ms=0); noahead (judges_ahead=0); noconfine (no seccomp/capability drop); keepargs (the worker's
serve loop before the fix: a request's arguments, and the CUDA IPC mappings in them, live until the next request);
noclocks (no NVML clock sample after each reference window).

Found on the H100 (results/gpu-acceptance/issue15/bimodal/): the first window after a round's input refresh was
the slow one; letting go of the refresh's mappings inside that request (harness/worker/worker.py serve) ended it.
Writes DIR/<variant>/ (the run) and DIR/bimodal-timing.jsonl (one line per variant: slow share per side and by
order in the round) and prints a table.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ["base", "nopause", "nooutbox", "noprobe", "noahead", "noconfine", "keepargs", "noclocks"]
SITECUSTOMIZE = r'''
import json, os, time
variant = os.environ.get("BIMODAL_VARIANT", "")
log_path = os.environ.get("BIMODAL_LOG")
if variant and log_path:
    from harness.judge import sandbox, timing as judge_timing
    from harness.common import handover, confine, channel
    from harness.worker import worker
    with open(log_path, "a") as f:
        f.write(json.dumps({"pid": os.getpid(), "op": "patched", "variant": variant}) + "\n")

    init = sandbox.Sandbox.__init__
    def __init__(self, env_extra, output_limit, kill_grace_s, confined=True):
        init(self, env_extra, output_limit, kill_grace_s, confined)
        self.bimodal_side = "new" if confined else "ref"
    sandbox.Sandbox.__init__ = __init__

    request = sandbox.Sandbox.request
    def logged(self, op, timeout, **args):
        reply = request(self, op, timeout, **args)
        if op in ("time", "refresh_timing_inputs"):
            sample = reply.payload[0] if op == "time" and isinstance(reply, channel.Ok) else None
            with open(log_path, "a") as f:
                f.write(json.dumps({"pid": os.getpid(), "t": time.monotonic(), "op": op,
                                    "side": getattr(self, "bimodal_side", "?"), "ms": sample}) + "\n")
        return reply
    sandbox.Sandbox.request = logged

    if variant == "nopause":
        sandbox.Sandbox.pause = lambda self: None
    if variant == "nooutbox":
        outbox_init = handover.Outbox.__init__
        def no_pool(self, device):
            outbox_init(self, device)
            self.pool = None
        handover.Outbox.__init__ = no_pool
    if variant == "noconfine":
        confine.confine = lambda: None
    if variant == "keepargs":  # the serve loop before the fix: a request's arguments live until the next request
        def serve(conn, w):
            while True:
                try:
                    op, args = conn.recv()
                except (EOFError, OSError):
                    return
                try:
                    reply = getattr(w, "op_" + op)(**args)
                except BaseException as exc:
                    reply = channel.failed("runtime_error", worker.describe(exc))
                conn.send(reply)
                if op == "exit":
                    return
        worker.serve = serve
    if variant == "noclocks":
        class NoClocks:
            def __init__(self, *a): pass
            def sample(self): pass
            def summary(self): return None
            def throttled(self): return False
        judge_timing.ClockMonitor = NoClocks
'''
AA = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
SLOW_MS = 4.6  # between the two modes (~4.33 and ~5.0 ms) of the full-size call on the H100


def run_variant(variant: str, out: Path, pairs: int, rounds: int, site: Path, timeout: float, shape: str) -> dict:
    """One run.py invocation of `pairs` A/A pairs under `variant`; the per-request log's summary."""
    folder = out / variant
    folder.mkdir(parents=True, exist_ok=True)
    solutions = []
    for i in range(pairs):
        path = folder / f"aa_{i}.py"
        path.write_text(AA)
        solutions += ["--solution", str(path)]
    log = folder / "requests.jsonl"
    log.unlink(missing_ok=True)
    config = {"cold_cache": False, "trials": 2, "wide_trials": 1, "min_rounds": rounds, "max_rounds": rounds,
              "target_ci_pct": 0.01, **({"gpu_probe_ms": 0.0} if variant == "noprobe" else {}),
              **({"judges_ahead": 0} if variant == "noahead" else {})}
    (folder / "config.yaml").write_text(json.dumps(config))  # JSON is YAML
    batch, dim = shape.split("x")
    command = [sys.executable, "run.py", "--problem", "tests/fixtures/problems/fx_relu.py", *solutions,
               "--set", f"batch_size={batch}", "--set", f"dim={dim}", "--config", str(folder / "config.yaml"),
               "--out", str(folder / "run")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "BIMODAL_VARIANT": variant,
           "BIMODAL_LOG": str(log)}
    started = time.monotonic()
    with open(folder / "run.log", "w") as f:
        code = subprocess.run(command, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=timeout).returncode
    wall = time.monotonic() - started
    return {"variant": variant, "exit": code, "wall_s": round(wall, 1), **summarize(log),
            "speedups": speedups(folder / "run" / "results.jsonl")}


def summarize(log: Path) -> dict:
    """Slow share of the timing samples per side and by position in the round (first or second window)."""
    if not log.exists():
        return {"samples": 0}
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    by_side, by_order, position = {"ref": [], "new": []}, {"first": [], "second": []}, {}
    for row in rows:
        if row["op"] == "patched":
            continue
        if row["op"] == "refresh_timing_inputs":
            position[row["pid"]] = 0
            continue
        if row["ms"] is None or row["side"] not in by_side:
            continue
        slot = position.get(row["pid"], 0)
        position[row["pid"]] = slot + 1
        slow = row["ms"] > SLOW_MS
        by_side[row["side"]].append(slow)
        if slot < 2:
            by_order[("first", "second")[slot]].append(slow)
    share = lambda xs: round(sum(xs) / len(xs), 3) if xs else None
    samples = [r["ms"] for r in rows if r.get("ms")]
    return {"patched_processes": sum(r["op"] == "patched" for r in rows), "samples": len(samples), "median_ms": round(statistics.median(samples), 3) if samples else None,
            "slow_ref": share(by_side["ref"]), "slow_new": share(by_side["new"]),
            "slow_first": share(by_order["first"]), "slow_second": share(by_order["second"])}


def speedups(results: Path) -> list:
    if not results.exists():
        return []
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    return [[r["status"], r.get("speedup") and round(r["speedup"], 4), r.get("flags")] for r in rows]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--shape", default="4096x393216", help="batch_size x dim of the relu (default: full size)")
    args = parser.parse_args()
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants: {', '.join(sorted(unknown))} (known: {', '.join(VARIANTS)})")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as site:
        Path(site, "sitecustomize.py").write_text(SITECUSTOMIZE)
        for variant in variants:
            try:
                row = run_variant(variant, args.out, args.pairs, args.rounds, Path(site), args.timeout, args.shape)
            except subprocess.TimeoutExpired:
                row = {"variant": variant, "exit": "timeout"}
            print(json.dumps(row), flush=True)
            with open(args.out / "bimodal-timing.jsonl", "a") as f:
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
