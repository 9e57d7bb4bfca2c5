"""Issue 63's benchmark: pairs an hour through `run.py serve`, and one small pair's answer from a warm service.
    python bench/service_throughput.py KERNELBENCH_DIR --out FILE.jsonl [--preset rl] [--devices 0|0,1] [--pairs N]
        [--generations DIR]
Starts the service (state in a fresh folder), submits N pairs in one batch, alternating KernelBench level-1 problems
in order, each against itself (`class ModelNew(Model): pass`), and public generations for level 1 (DIR is what
bench/realgen_corpus.py writes: DIR/pairs.csv, each generation with the problem file it was written for); waits for
all; then times one small pair alone (level1 19_ReLU against itself, submit to done). Appends one JSON line: preset,
devices, GPU, pairs of each kind, statuses, wall, pairs an hour, the single pair's seconds."""
import csv
import argparse
import json
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


def pairs_of(kernelbench: Path, count: int, generations: Path | None) -> tuple[list, int]:
    """(problem, candidate) sources, A/A and generation by turns, `count` in all; and how many are generations."""
    level1 = sorted((kernelbench / "level1").glob("*.py"), key=lambda p: int(p.name.split("_")[0]))
    aa = [(problem.read_text(), AA) for problem in level1]
    generated = []
    if generations:
        with open(generations / "pairs.csv") as handle:
            generated = [((generations / row["problem"]).read_text(), (generations / row["candidate"]).read_text())
                         for row in csv.DictReader(handle) if row["level"] == "1"]
    mixed = [pair for turn in zip(aa, generated) for pair in turn]
    mixed += aa[len(generated):] + generated[len(aa):]
    return mixed[:count], sum(1 for pair in mixed[:count] if pair[1] != AA)


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
    parser.add_argument("--generations", type=Path, help="bench/realgen_corpus.py's output folder")
    args = parser.parse_args()
    pairs, generated = pairs_of(args.kernelbench, args.pairs, args.generations)
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
    row = {"preset": args.preset, "devices": health["devices"], "gpu": results[0].get("gpu"), "pairs": len(results), "generations": generated,
           "statuses": statuses, "wall_s": round(wall, 1), "pairs_per_hour": round(3600 * len(results) / wall),
           "single_pair_s": round(single_s, 2), "single_status": single["status"],
           "harness": results[0].get("harness")}
    with open(args.out, "a") as handle:
        handle.write(json.dumps(row) + "\n")
    print(json.dumps(row))


if __name__ == "__main__":
    main()
