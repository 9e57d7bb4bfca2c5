"""The acceptance runs on the CPU: C++ load_inline candidates judged end to end, CUDA ones skipped."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from support import FIXTURES, ROOT

SMALL = {
    "sigmoid": ["batch_size=32", "dim=2048"],
    "hardsigmoid": ["batch_size=32", "dim=2048"],
    "gemm_sigmoid_scaling_residualadd": ["batch_size=16", "input_size=128", "hidden_size=64"],
    "matmul_sigmoid_sum": ["batch_size=8", "input_size=256", "hidden_size=512"],
}


PIPELINE_CONFIG = FIXTURES / "pipeline.yaml"


def start_problem(problem, out, config, *extra):
    """run.py on one problem's candidates, on the CPU at a small size, in the background (output in OUT.log)."""
    args = [sys.executable, "run.py", "--problem", problem, "--device", "cpu", "--config", str(config),
            "--out", str(out), *extra]
    for item in SMALL[problem]:
        args += ["--set", item]
    with open(f"{out}.log", "w") as log:
        return subprocess.Popen(args, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True)


def finish(run, out):
    """(exit status, console output, {solution: result}) of a run started by start_problem."""
    code = run.wait(timeout=1200)
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return code, Path(f"{out}.log").read_text(), {r["solution"]: r for r in results}


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """The four problems at once (timing is not what these tests check; the cold C++ builds overlap), with a
    build cache of their own."""
    root = tmp_path_factory.mktemp("pipeline")
    config = root / "pipeline.yaml"
    config.write_text(PIPELINE_CONFIG.read_text() + f"build_cache_dir: {root / 'builds'}\n")
    runs = {problem: start_problem(problem, root / problem, config) for problem in sorted(SMALL)}
    return config, {problem: (root / problem, *finish(run, root / problem)) for problem, run in runs.items()}


@pytest.mark.parametrize("problem", sorted(SMALL))
def test_problem_on_cpu(problem, pipeline):
    out, code, console, results = pipeline[1][problem]
    assert code == 0, console[-2000:]
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
    assert "correct" in console and "skipped" in console  # the console table
    assert (out / "speedups.csv").is_file() and (out / "meta.json").is_file()


def test_second_run_reuses_the_build(pipeline, tmp_path):
    """The pipeline's own build cache: its run really built cpp_parallel, a second run finds the build."""
    config, runs = pipeline
    first = runs["sigmoid"][3]["cpp_parallel"]
    code, console, second = finish(start_problem("sigmoid", tmp_path / "again", config, "--solution",
                                                 "solutions/sigmoid/cpp_parallel.py"), tmp_path / "again")
    assert code == 0, console[-2000:]
    assert first["status"] == second["cpp_parallel"]["status"] == "correct"
    assert first["compile_s"] > 2  # a C++ build takes seconds
    assert second["cpp_parallel"]["compile_s"] < 0.5 * first["compile_s"]  # a cache hit


def test_weights_follow_the_reference(tmp_path):
    args = [sys.executable, "run.py", "--problem", str(FIXTURES / "problems" / "fx_linear.py"), "--solution",
            str(FIXTURES / "solutions" / "fx_linear" / "fused_torch.py"), "--device", "cpu",
            "--config", str(FIXTURES / "fast.yaml"), "--set", "out_features=48", "--out", str(tmp_path)]
    assert subprocess.run(args, cwd=ROOT, capture_output=True, timeout=600).returncode == 0
    (result,) = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert result["status"] == "correct", result["error"]
