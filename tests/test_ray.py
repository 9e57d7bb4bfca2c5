"""--executor ray: the same stages as Ray tasks on a local CPU Ray; the same statuses as the local executor."""
import json
import subprocess
import sys

import pytest

from conftest import FAST_CONFIG, FIXTURES, ROOT

pytest.importorskip("ray")
ADVERSARIAL = ROOT / "tests" / "adversarial" / "cpu"
SOLUTIONS = [FIXTURES / "solutions" / "fx_relu" / "correct_torch.py", ADVERSARIAL / "wrong_values.py",
             ADVERSARIAL / "syntax_error.py", ADVERSARIAL / "os_exit.py", ADVERSARIAL / "raises_in_forward.py",
             FIXTURES / "builds" / "broken_cpp.py"]


def statuses(out, *extra):
    config = out.parent / "ray.yaml"  # room for a C++ build, done by the build stage (a Ray task on Ray)
    config.write_text(FAST_CONFIG.read_text() + "compile_timeout: 300\nprebuild: on\n")
    args = [sys.executable, "run.py", "--problem", str(FIXTURES / "problems" / "fx_relu.py"), "--device", "cpu",
            "--config", str(config), "--out", str(out), *extra]
    for path in SOLUTIONS:
        args += ["--solution", str(path)]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return {r["solution"]: r["status"] for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}


def test_ray_gives_the_local_statuses(tmp_path):
    local = statuses(tmp_path / "local")
    on_ray = statuses(tmp_path / "ray", "--executor", "ray")
    assert on_ray == local
    assert local["correct_torch"] == "correct" and local["broken_cpp"] == "compile_error"
    errors = {r["solution"]: r["error"] for r in map(json.loads, (tmp_path / "ray" / "results.jsonl").read_text().splitlines())}
    assert "build stage" in errors["broken_cpp"]  # ended by the build task, before any evaluation
