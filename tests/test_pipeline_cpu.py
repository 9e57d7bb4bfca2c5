"""The acceptance runs on the CPU: C++ load_inline candidates judged end to end, CUDA ones skipped."""
import json
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT

SMALL = {
    "sigmoid": ["batch_size=32", "dim=2048"],
    "hardsigmoid": ["batch_size=32", "dim=2048"],
    "gemm_sigmoid_scaling_residualadd": ["batch_size=16", "input_size=128", "hidden_size=64"],
    "matmul_sigmoid_sum": ["batch_size=8", "input_size=256", "hidden_size=512"],
}


def run_problem(problem, tmp_path):
    args = [sys.executable, "run.py", "--problem", problem, "--device", "cpu", "--out", str(tmp_path)]
    for item in SMALL[problem]:
        args += ["--set", item]
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    results = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    return out, {r["solution"]: r for r in results}


@pytest.mark.parametrize("problem", sorted(SMALL))
def test_problem_on_cpu(problem, tmp_path):
    out, results = run_problem(problem, tmp_path)
    assert out.returncode == 0, out.stderr
    cpu = [name for name in results if name.startswith("cpp_")]
    assert cpu, "each problem has a C++ CPU candidate"
    for name, result in results.items():
        if name.startswith("cpp_"):
            assert result["status"] == "correct", result["error"]
            assert result["speedup_ci_low"] <= result["speedup"] <= result["speedup_ci_high"]
            assert result["ref_samples_ms"] and result["new_samples_ms"]
            assert result["new_err_vs_fp64"] is not None and "reduced_precision" not in result["flags"]
        else:
            assert result["status"] == "skipped" and "CUDA" in result["error"]
    assert "correct" in out.stdout and "skipped" in out.stdout  # the console table
    assert (tmp_path / "speedups.csv").is_file() and (tmp_path / "meta.json").is_file()


def test_second_run_reuses_the_build(tmp_path):
    run_problem("sigmoid", tmp_path / "first")
    _, results = run_problem("sigmoid", tmp_path / "second")
    assert results["cpp_parallel"]["compile_s"] < 10  # a cache hit: no rebuild


def test_weights_follow_the_reference(tmp_path):
    args = [sys.executable, "run.py", "--problem", str(FIXTURES / "problems" / "fx_linear.py"), "--solution",
            str(FIXTURES / "solutions" / "fx_linear" / "fused_torch.py"), "--device", "cpu",
            "--config", str(FIXTURES / "fast.yaml"), "--set", "out_features=48", "--out", str(tmp_path)]
    assert subprocess.run(args, cwd=ROOT, capture_output=True, timeout=600).returncode == 0
    (result,) = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert result["status"] == "correct", result["error"]
