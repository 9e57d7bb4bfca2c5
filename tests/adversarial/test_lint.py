"""`run.py lint` reports problems that a constant, zeros, or input-blind output would pass."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def lint(*problems):
    args = [sys.executable, "run.py", "lint", "--device", "cpu"]
    for problem in problems:
        args += ["--problem", str(problem)]
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_broken_problems_are_reported():
    proc = lint(HERE / "problems" / "ignores_its_input.py", HERE / "problems" / "vanishing_output.py")
    assert proc.returncode == 1, proc.stderr
    assert "ignores_its_input: its output does not depend on its inputs" in proc.stdout
    assert "vanishing_output: an output of all zeros would pass" in proc.stdout


def test_sound_problems_pass():
    proc = lint(ROOT / "tests" / "fixtures" / "problems" / "fx_relu.py",
                ROOT / "tests" / "fixtures" / "problems" / "fx_linear.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": ok") == 2
