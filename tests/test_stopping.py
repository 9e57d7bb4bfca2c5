"""Ctrl-C and SIGTERM stop a run cleanly: the pairs that ended are recorded and tabled, the one in flight records
nothing, the exit status is 128 + the signal, and --resume judges the rest once each."""
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from support import FAST_CONFIG, FIXTURES, ROOT

PROBLEM = FIXTURES / "problems" / "fx_relu.py"
CANDIDATES = sorted((FIXTURES / "interrupt").glob("*.py"))  # a_first, c_last, slow_to_construct (judged in this order)


def start(out, candidates, *extra):
    args = [sys.executable, "run.py", "--problem", str(PROBLEM), "--device", "cpu", "--config", str(FAST_CONFIG),
            "--timeout", "60", "--out", str(out), *extra]
    for path in candidates:
        args += ["--solution", str(path)]
    return subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def recorded(out) -> list:
    path = out / "results.jsonl"
    return [json.loads(line)["solution"] for line in path.read_text().splitlines()] if path.exists() else []


def descendants(pid: int) -> set:
    """The PIDs of a process's children, theirs, and so on (this run's processes alone: a pgrep over the machine would
    also see another run's, such as a concurrent test session's)."""
    found, waiting = set(), [pid]
    while waiting:
        children = subprocess.run(["pgrep", "-P", str(waiting.pop())], capture_output=True, text=True).stdout.split()
        found |= {int(c) for c in children}
        waiting += children
    return found


def running(pids: set) -> set:
    """Those of pids still running (a zombie, dead and waiting to be reaped, is not)."""
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def wait_for(condition, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_ctrl_c_records_what_ended_and_resume_judges_the_rest_once(tmp_path):
    out = tmp_path / "run"
    run = start(out, CANDIDATES)
    wait_for(lambda: len(recorded(out)) == 2, 240)  # a_first and c_last ended: slow_to_construct is in flight
    time.sleep(2)
    processes = descendants(run.pid)  # the judge factory, the judge in flight, its workers, judges started ahead
    assert processes
    sent = time.monotonic()
    run.send_signal(signal.SIGINT)
    console = run.communicate(timeout=60)[0]
    assert run.returncode == 130, console[-2000:]
    assert time.monotonic() - sent < 10
    assert sorted(recorded(out)) == ["a_first", "c_last"]  # nothing for the pair in flight
    assert "Traceback" not in console and "--resume" in console
    assert (out / "leaderboard.csv").read_text().count("\n") == 3  # the header and the two that ended
    wait_for(lambda: not running(processes), 5)  # no process of the run is left (SIGKILL takes a moment)

    resumed = start(out, CANDIDATES, "--resume")
    assert resumed.wait(timeout=300) == 0
    assert sorted(recorded(out)) == ["a_first", "c_last", "slow_to_construct"]  # each exactly once


def test_sigterm_stops_at_once_and_a_second_signal_does_not_wait(tmp_path):
    out = tmp_path / "run"
    run = start(out, CANDIDATES[-1:])  # slow_to_construct alone
    wait_for(lambda: (out / "logs").is_dir() and any((out / "logs").iterdir()), 120)
    time.sleep(3)
    sent = time.monotonic()
    run.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    run.send_signal(signal.SIGINT)  # a second signal (an impatient user): out at once, if not out already
    console = run.communicate(timeout=30)[0]
    assert time.monotonic() - sent < 10
    assert run.returncode == 128 + signal.SIGTERM, console[-2000:]
    assert recorded(out) == [] and "Traceback" not in console
