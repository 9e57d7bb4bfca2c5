"""Issue 63's benchmark: pairs an hour through `run.py serve`, and one small pair's answer from a warm service.
    python bench/service_throughput.py KERNELBENCH_DIR --out FILE.jsonl [--preset rl] [--devices 0|0,1] [--pairs N]
        [--generations DIR] [--budget-s S] [--records FILE.jsonl] [--single PROBLEM.py]
Starts the service (state in a fresh folder), warms it with one small pair (level1 19_ReLU against itself, or
--single's problem) and times that pair alone (submit to done), then submits N pairs in batches, alternating
KernelBench level-1 problems in order, each against itself (`class ModelNew(Model): pass`), and public generations
for level 1 (DIR is what bench/realgen_corpus.py writes: DIR/pairs.csv, each generation with the problem file it was
written for); waits for all, or at most --budget-s (then the pairs done count; a job needing no build is queued
first, so a cut batch holds fewer generations: the row says how many were judged). Each generation is built as a
reward loop's would be: the service gets a build cache of its own, empty. Progress is read from /v1/health (once a
second), the Results once at the end. Appends one JSON line: preset, devices, GPU, pairs of each kind, statuses, wall,
pairs an hour, the single pair's seconds; --records: each Result."""
import argparse
import csv
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
    config = state / "fresh-builds.yaml"  # an empty build cache: every generation is built, as in a reward loop
    config.write_text(f"build_cache_dir: {json.dumps(str(state / 'builds'))}\n")
    proc = subprocess.Popen([sys.executable, "run.py", "serve", "--port", str(port), "--state", str(state / "service"),
                             "--preset", preset, "--config", str(config), *where], cwd=ROOT)
    client = Client(f"http://127.0.0.1:{port}", timeout=120)
    while True:
        try:
            return proc, client, client.health()
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("the service exited") from None
            time.sleep(0.5)


def judged_within(client, ids: list, budget_s: float) -> tuple[list, float, bool]:
    """Each job's Result (None if not done) when none is left (or after budget_s, if not 0), the seconds that took,
    and whether the budget cut it. The service is asked once a second how many it still holds, not once per job."""
    started = time.monotonic()
    while True:
        health = client.health()
        elapsed = time.monotonic() - started
        cut = bool(budget_s) and elapsed > budget_s
        if cut or health["building"] + health["queued"] + health["running"] == 0:
            found = [client.get(job_id) for job_id in ids]
            done = [f.get("result") for f in found]
            if cut or None not in done:  # (else one was between its build and the queue: ask again)
                return done, elapsed, cut
        time.sleep(1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernelbench", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--records", type=Path, help="append every pair's Result here too")
    parser.add_argument("--preset", default="default")
    parser.add_argument("--devices", default="")
    parser.add_argument("--pairs", type=int, default=60)
    parser.add_argument("--budget-s", type=float, default=0.0,
                        help="stop waiting after this many seconds and count the pairs done (0: wait for all)")
    parser.add_argument("--generations", type=Path, help="bench/realgen_corpus.py's output folder")
    parser.add_argument("--single", type=Path, help="the single pair's problem, against itself (default: "
                                                    "KERNELBENCH_DIR/level1/19_ReLU.py; KernelBench v0's is small)")
    args = parser.parse_args()
    pairs, generated = pairs_of(args.kernelbench, args.pairs, args.generations)
    single_problem = args.single or next((args.kernelbench / "level1").glob("19_*.py"))
    relu = single_problem.read_text()
    with tempfile.TemporaryDirectory() as state:
        proc, client, health = start(Path(state), args.devices, args.preset)
        try:
            client.evaluate(relu, AA, timeout=600)  # the service's first job warms it (CUDA, the judge factory)
            single_started = time.monotonic()
            single = client.evaluate(relu, AA, timeout=600)
            single_s = time.monotonic() - single_started
            ids = sum((client.submit_batch(pairs[i:i + 256]) for i in range(0, len(pairs), 256)), [])
            done, wall, cut = judged_within(client, ids, args.budget_s)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=600)
    statuses: dict = {"aa": {}, "generation": {}}
    for (_, candidate), result in zip(pairs, done):
        if result is not None:
            kind = statuses["aa" if candidate == AA else "generation"]
            kind[result["status"]] = kind.get(result["status"], 0) + 1
    results = [result for result in done if result is not None]
    row = {"preset": args.preset, "devices": health["devices"], "gpu": single.get("gpu"), "submitted": len(pairs),
           "generations": generated, "pairs": len(results), "generations_judged": sum(statuses["generation"].values()),
           "statuses": statuses, "budget_cut": cut, "wall_s": round(wall, 1),
           "pairs_per_hour": round(3600 * len(results) / wall) if wall else None,
           "single_pair_s": round(single_s, 2), "single_status": single["status"],
           "single_problem": str(single_problem), "harness": single.get("harness")}
    with open(args.out, "a") as handle:
        handle.write(json.dumps(row) + "\n")
    if args.records:
        with open(args.records, "a") as handle:
            handle.writelines(json.dumps({**r, "preset": args.preset, "kind": "aa" if c == AA else "generation"})
                              + "\n" for (_, c), r in zip(pairs, done) if r is not None)
    print(json.dumps(row))


if __name__ == "__main__":
    main()
