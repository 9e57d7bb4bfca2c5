"""Paths and probes the tests share (imported as `support`; conftest.py holds only pytest hooks)."""
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
FAST_CONFIG = FIXTURES / "fast.yaml"
GOLDEN = FIXTURES / "reports"  # results.jsonl of a made-up run, and the boards made from it


def golden_results() -> list:
    """The golden run's Results."""
    from harness.common.records import Result

    return [Result.from_dict(json.loads(line)) for line in (GOLDEN / "results.jsonl").read_text().splitlines()]


def pair_job(**fields):
    """A protocol.PairJob with stand-in values for whatever a test leaves out."""
    from harness.common.config import build_config
    from harness.common.protocol import PairJob

    base = dict(problem="p", problem_path="p.py", solution="s", solution_path="s.py", solution_source="",
                overrides={}, device="cpu", config=build_config(str(FAST_CONFIG), {"device": "cpu"}), secret=7,
                log_path="/dev/null", build_dir="", peaks_dir="")
    return PairJob(**{**base, **fields})


def service_results(service, jobs: list, seconds: float, drain_s: float = 60) -> list:
    """Start a runner.service.Service, submit (problem, candidate, options) jobs and wait at most `seconds` for them;
    each job's Result as JSON (None if not done), the service drained."""
    import time

    service.start()
    try:
        ids = service.submit_many(jobs)
        deadline = time.monotonic() + seconds
        while any(service.status(i)["state"] != "done" for i in ids) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        service.drain(timeout=drain_s)
    return [service.status(i).get("result") for i in ids]


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


class NoJudges:
    """Stands in for judge_processes.JudgeStarter where no judge may start (no GPU to start it on, nothing to judge)."""

    def close(self):
        pass


def judge_run(problem: str, solutions: list, out: Path, config: Path, timeout_s: int, *extra: str) -> tuple:
    """Judge the solutions on `problem` in one run.py invocation as a user types it (no --device):
    ({solution: record}, the run's wall seconds)."""
    args = [sys.executable, "run.py", "--problem", problem, "--config", str(config), "--timeout", str(timeout_s),
            "--out", str(out), *extra]
    for path in solutions:
        args += ["--solution", str(path)]
    started = time.monotonic()
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = {r["solution"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    return results, time.monotonic() - started
