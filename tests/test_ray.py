"""--executor ray: the same stages as Ray tasks on a local CPU Ray; the same statuses as the local executor."""
import json
import subprocess
import sys

import pytest

from support import FAST_CONFIG, FIXTURES, ROOT

pytest.importorskip("ray")
ADVERSARIAL = ROOT / "tests" / "adversarial" / "cpu"
# What the local executor makes of these is tested in tests/adversarial (and builds, in test_builds).
EXPECTED = {"correct_torch": "correct", "wrong_values": "incorrect", "syntax_error": "compile_error",
            "os_exit": "crash", "build_fails_in_init": "compile_error"}
SOLUTIONS = [FIXTURES / "solutions" / "fx_relu" / "correct_torch.py",
             *(ADVERSARIAL / f"{name}.py" for name in EXPECTED if name != "correct_torch")]


def statuses(out, *extra):
    config = out.parent / "ray.yaml"  # the build stage (a Ray task on Ray) on, with room for a C++ build
    config.write_text(FAST_CONFIG.read_text() + "compile_timeout: 300\nprebuild: on\n")
    args = [sys.executable, "run.py", "--problem", str(FIXTURES / "problems" / "fx_relu.py"), "--device", "cpu",
            "--config", str(config), "--out", str(out), *extra]
    for path in SOLUTIONS:
        args += ["--solution", str(path)]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return {r["solution"]: r["status"] for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}


def test_ray_gives_the_local_statuses(tmp_path):
    assert statuses(tmp_path / "ray", "--executor", "ray") == EXPECTED
    errors = {r["solution"]: r["error"] for r in map(json.loads, (tmp_path / "ray" / "results.jsonl").read_text().splitlines())}
    assert "build stage" in errors["build_fails_in_init"]  # ended by the build task, before any evaluation
