"""Issue 63's benchmark: pairs an hour through `run.py serve`, and one small pair's answer from a warm service.
    python bench/service_throughput.py KERNELBENCH_DIR --out FILE.jsonl [--preset rl] [--devices 0|0,1] [--pairs N]
        [--candidates DIR]
Starts the service (state in a fresh folder), submits N pairs in one batch: KernelBench level-1 problems in order,
each against itself (`class ModelNew(Model): pass`), and each file of --candidates DIR (public generations named
level_1_problem_P_sample_S*.py, paired with level1/P_*.py); waits for all; then times one small pair alone (level1
19_ReLU against itself, submit to done). Appends one JSON line: preset, devices, GPU, pairs, statuses, wall, pairs
an hour, the single pair's seconds."""
import argparse
import json
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

AA = "\n\nclass ModelNew(Model):\n    pass\n"


def pairs_of(kernelbench: Path, count: int, candidates: Path | None) -> list:
    """(problem source, candidate source) pairs: generations first, then level-1 A/A pairs, `count` in all."""
    level1 = sorted((kernelbench / "level1").glob("*.py"), key=lambda p: int(p.name.split("_")[0]))
    by_number = {int(p.name.split("_")[0]): p for p in level1}
    pairs = []
    for path in sorted(candidates.glob("*.py")) if candidates else []:
        match = re.match(r"level_1_problem_(\d+)_sample_\d+", path.stem)
        if match and int(match.group(1)) in by_number:
            pairs.append((by_number[int(match.group(1))].read_text(), path.read_text()))
    for problem in level1:
        pairs.append((problem.read_text(), AA))
    return pairs[:count]


def start(state: Path, devices: str, preset: str) -> tuple:
    """The service and its client, once it answers."""
    from harness.runner.client import Client

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    where = ["--devices", devices] if devices else []
    proc = subprocess.Popen([sys.executable, "run.py", "serve", "--port", str(port), "--state", str(state),
                             "--preset", preset, *where], cwd=ROOT)
    client = Client(f"http://127.0.0.1:{port}", timeout=120)
    while True:
        try:
            return proc, client, client.health()
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("the service exited")
            time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernelbench", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--preset", default="default")
    parser.add_argument("--devices", default="")
    parser.add_argument("--pairs", type=int, default=60)
    parser.add_argument("--candidates", type=Path)
    args = parser.parse_args()
    pairs = pairs_of(args.kernelbench, args.pairs, args.candidates)
    relu = next((args.kernelbench / "level1").glob("19_*.py")).read_text()
    with tempfile.TemporaryDirectory() as state:
        proc, client, health = start(Path(state), args.devices, args.preset)
        try:
            started = time.monotonic()
            ids = client.submit_batch(pairs) if len(pairs) <= 256 else sum(
                (client.submit_batch(pairs[i:i + 256]) for i in range(0, len(pairs), 256)), [])
            results = [client.wait(job_id, timeout=7200) for job_id in ids]
            wall = time.monotonic() - started
            single_started = time.monotonic()
            single = client.evaluate(relu, AA, timeout=600)
            single_s = time.monotonic() - single_started
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=600)
    statuses: dict = {}
    for result in results:
        statuses[result["status"]] = statuses.get(result["status"], 0) + 1
    row = {"preset": args.preset, "devices": health["devices"], "gpu": results[0].get("gpu"), "pairs": len(results),
           "statuses": statuses, "wall_s": round(wall, 1), "pairs_per_hour": round(3600 * len(results) / wall),
           "single_pair_s": round(single_s, 2), "single_status": single["status"],
           "harness": results[0].get("harness")}
    with open(args.out, "a") as handle:
        handle.write(json.dumps(row) + "\n")
    print(json.dumps(row))


if __name__ == "__main__":
    main()
