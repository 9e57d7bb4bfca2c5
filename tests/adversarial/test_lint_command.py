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


def test_a_problem_too_large_to_lint_here_is_not_checked_with_the_figures():
    args = [sys.executable, "run.py", "lint", "--device", "cpu", "--problem", str(ROOT / "tests" / "fixtures" / "problems"
            / "fx_relu.py"), "--set", "batch_size=1048576", "--set", "dim=1048576"]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    text = " ".join(proc.stdout.split())
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "fx_relu: not checked: needs over 24576.0 GiB of memory" in text and "batch_size=1048576" in text


def test_a_lint_process_that_dies_says_so():
    from harness.runner.cli import lint_outcome

    killed = subprocess.CompletedProcess([], -9, stdout="", stderr="")
    assert lint_outcome(killed) == {"not_checked": "the lint failed: killed by signal 9 (most likely the out-of-memory "
                                                   "killer)"}
    silent = subprocess.CompletedProcess([], 1, stdout="", stderr="")
    assert lint_outcome(silent)["not_checked"].endswith("exit code 1 and no output")
