"""A run killed with SIGKILL mid-way, then resumed, has every pair exactly once and its earlier lines intact."""
import os
import signal
import subprocess
import sys
import time

from support import FAST_CONFIG, FIXTURES, ROOT
from harness.common import store

ADVERSARIAL = ROOT / "tests" / "adversarial" / "cpu"
SOLUTIONS = [FIXTURES / "solutions" / "fx_relu" / "correct_torch.py", FIXTURES / "solutions" / "fx_relu" / "aa_reference.py",
             ADVERSARIAL / "wrong_values.py", ADVERSARIAL / "returns_tuple.py", ADVERSARIAL / "syntax_error.py",
             ADVERSARIAL / "wrong_shape.py"]


def command(out):
    args = [sys.executable, "run.py", "--problem", str(FIXTURES / "problems" / "fx_relu.py"), "--device", "cpu",
            "--config", str(FAST_CONFIG), "--out", str(out), "--resume"]
    for path in SOLUTIONS:
        args += ["--solution", str(path)]
    return args


def test_sigkill_then_resume(tmp_path):
    out = tmp_path / "run"
    results = out / "results.jsonl"
    proc = subprocess.Popen(command(out), cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and (not results.exists() or len(results.read_text().splitlines()) < 2):
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the runner and its judge, mid-pair; workers follow their judge
    proc.wait()
    before = results.read_bytes()
    done_before = len(store.read_jsonl(results)[0])
    assert 2 <= done_before < len(SOLUTIONS)
    with open(results, "ab") as handle:  # and a line torn in the middle of a write
        handle.write(b'{"key": "torn')

    rerun = subprocess.run(command(out), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert "1 torn or unreadable line(s) ignored" in rerun.stdout
    assert results.read_bytes().startswith(before)  # earlier lines unchanged
    records, torn = store.read_jsonl(results)
    assert torn == 1
    assert sorted(r["solution"] for r in records) == sorted(p.stem for p in SOLUTIONS)  # each pair exactly once
