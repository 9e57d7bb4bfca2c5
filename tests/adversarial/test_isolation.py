"""One side at a time, shown on the CPU: while the reference runs (in the judge or in its timing worker), no
process of the candidate's runs. The reference problem logs the CLOCK_MONOTONIC span of each of its calls; the
candidate's spinners (a thread, and an orphaned child in a session of its own) log when they ran."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def read_stamps(paths) -> list:
    return sorted(int(line) for path in paths for line in path.read_text().split())


def read_spans(paths) -> list:
    return sorted(tuple(map(int, line.split())) for path in paths for line in path.read_text().splitlines())


def test_no_candidate_process_runs_during_a_reference_call(tmp_path):
    env = {**os.environ, "HARNESS_TEST_CALL_LOG": str(tmp_path / "calls"), "HARNESS_TEST_HOG_LOG": str(tmp_path / "hog")}
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "run.py", "--problem", str(HERE / "problems" / "logs_its_calls.py"),
                           "--solution", str(HERE / "cpu" / "hogs_while_idle.py"), "--device", "cpu",
                           "--config", str(HERE / "adversarial.yaml"), "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads((out / "results.jsonl").read_text())
    assert result["status"] == "correct", result["error"]
    spans = read_spans(tmp_path.glob("calls.*"))
    assert len({p.name for p in tmp_path.glob("calls.*")}) == 2  # the judge and the reference's worker
    assert len(spans) >= result["timing_rounds"]
    for spinner in ("thread", "child"):
        stamps = read_stamps(tmp_path.glob(f"hog.{spinner}"))
        assert len(stamps) > 20, spinner  # it did run (during its own requests)
        inside = [t for t in stamps for start, end in spans if start < t < end]
        assert not inside, f"the candidate's {spinner} ran during {len(inside)} reference call(s)"


def test_a_reference_worker_rescheduled_during_timing_voids_the_speedup(tmp_path):
    # What the seccomp filter cannot refuse (a write to cgroup.procs; a machine without the filter), shown by a
    # reference that renices itself during its timing: the judge sees the change and claims no speedup.
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "run.py", "--problem", str(HERE / "problems" / "reniced_while_timed.py"),
                           "--solution", str(HERE / "cpu" / "calls_the_reference_op.py"), "--device", "cpu",
                           "--config", str(HERE / "adversarial.yaml"), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads((out / "results.jsonl").read_text())
    assert result["status"] == "correct", result["error"]
    assert "interference" in result["flags"] and result["speedup"] is None
    judge_log = "".join(p.read_text() for p in (out / "logs").glob("*judge*"))
    assert "the reference's worker was rescheduled" in judge_log
    before, after = map(int, re.search(r"nice (-?\d+) -> (-?\d+)", judge_log).groups())
    assert after == before + 5
