"""The CUDA adversarial set (tests/adversarial/cuda) plus CPU ones that matter on a GPU, judged on a GPU."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CPU_ONES = ["calls_the_reference_op", "returns_uninitialized", "caches_by_pointer", "caches_by_content",
            "mutates_input"]


def judge(problem: str, solutions: list, out: Path, *extra: str) -> dict:
    args = [sys.executable, "run.py", "--problem", problem, "--device", "cuda", "--config",
            str(HERE / "adversarial.yaml"), "--timeout", "30", "--out", str(out), *extra]
    for path in solutions:
        args += ["--solution", str(path)]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {r["solution"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}


@pytest.fixture(scope="module")
def gpu_run(tmp_path_factory):
    solutions = sorted((HERE / "cuda").glob("*.py")) + [HERE / "cpu" / f"{name}.py" for name in CPU_ONES]
    solutions = [s for s in solutions if s.stem != "bfloat16_matmul"]
    return judge("tests/fixtures/problems/fx_relu.py", solutions, tmp_path_factory.mktemp("gpu-adversarial"))


@pytest.mark.parametrize("solution,status,flags", [
    ("illegal_memory_access", ("runtime_error", "crash"), []),
    ("kernel_infinite_loop", ("timeout",), []),
    ("gpu_out_of_memory", ("runtime_error",), []),
    ("custom_relu_kernel", ("correct",), []),
    ("calls_the_reference_op", ("correct",), ["no_custom_kernel"]),
    ("side_stream_work", ("correct",), []),
    ("patches_cuda_events", ("correct",), ["timer_tampering"]),
    ("returns_uninitialized", ("incorrect",), []),
    ("caches_by_pointer", ("incorrect",), []),
    ("caches_by_content", ("correct",), []),
    ("mutates_input", ("incorrect",), ["input_mutated"]),
])
def test_gpu_status_and_flags(gpu_run, solution, status, flags):
    result = gpu_run[solution]
    assert result["status"] in status, result["error"]
    assert set(flags) <= set(result["flags"]), result["flags"]


def test_honest_kernel_is_not_flagged(gpu_run):
    assert not {"no_custom_kernel", "timer_tampering"} & set(gpu_run["custom_relu_kernel"]["flags"])


def test_side_stream_work_is_timed(gpu_run):
    assert gpu_run["side_stream_work"]["speedup"] < 0.5  # 50 relus on a side stream cost what they cost


def test_bfloat16_gemm_is_exposed(tmp_path):
    results = judge("matmul_sigmoid_sum", [HERE / "cuda" / "bfloat16_matmul.py"], tmp_path,
                    "--set", "input_size=8192", "--set", "hidden_size=8192")
    result = results["bfloat16_matmul"]
    assert result["status"] == "incorrect" or "reduced_precision" in result["flags"], result
