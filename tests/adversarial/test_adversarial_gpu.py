"""The CUDA adversarial set (tests/adversarial/cuda) plus CPU ones that matter on a GPU, judged on a GPU as a
user runs the harness: no --device flag (auto), judges started ahead, the build stage on."""
import os
from pathlib import Path

import pytest
from support import judge_run

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
FIXTURES = ROOT / "tests" / "fixtures"
CPU_ONES = ["calls_the_reference_op", "returns_uninitialized", "caches_by_pointer", "caches_by_content",
            "mutates_input", "signals_the_harness"]
TIMEOUT_S = 30


def judge(problem: str, solutions: list, out: Path, *extra: str) -> tuple:
    """The adversarial config's run.py over these solutions (support.judge_run)."""
    return judge_run(problem, solutions, out, HERE / "adversarial.yaml", TIMEOUT_S, *extra)
# judged on problems of their own sizes (the GPU hogs in test_isolation_gpu.py)
ALONE = ("bfloat16_matmul", "keeps_every_output", "hogs_the_gpu_while_idle", "hog_child_on_the_gpu", "caches_by_version")


def gpu_set() -> list:
    """The candidates judged together on fx_relu: the CUDA set and CPU_ONES, less those judged ALONE."""
    solutions = sorted((HERE / "cuda").glob("*.py")) + [HERE / "cpu" / f"{name}.py" for name in CPU_ONES]
    return [s for s in solutions if s.stem not in ALONE]


@pytest.fixture(scope="module")
def gpu_run(tmp_path_factory):
    """The set in one run; HARNESS_GPU_ADVERSARIAL_OUT keeps its run folder (the GPU acceptance script reads it)."""
    solutions = gpu_set()
    kept = os.environ.get("HARNESS_GPU_ADVERSARIAL_OUT")
    out = Path(kept) if kept else tmp_path_factory.mktemp("gpu-adversarial")
    return judge("tests/fixtures/problems/fx_relu.py", solutions, out)


# (candidate, statuses it may get, flags it must get): run.py's verdicts, which test_presets_gpu.py asks of the
# library API and the service under --preset rl
GPU_EXPECTED = [
    ("illegal_memory_access", ("runtime_error", "crash"), []),
    ("kernel_infinite_loop", ("timeout",), []),
    ("gpu_out_of_memory", ("runtime_error",), []),
    ("custom_relu_kernel", ("correct",), []),
    ("calls_the_reference_op", ("correct",), ["no_custom_kernel"]),
    ("side_stream_work", ("correct",), []),
    ("patches_cuda_events", ("correct",), ["timer_tampering"]),
    ("forges_cuda_clock", ("correct",), ["timer_tampering"]),
    ("returns_uninitialized", ("incorrect",), []),
    ("caches_by_pointer", ("incorrect",), []),
    ("caches_by_content", ("correct",), []),
    ("mutates_input", ("incorrect",), ["input_mutated"]),
    ("signals_the_harness", ("correct",), []),  # every signal, ptrace and /proc read refused
    ("scans_its_mapped_segment", ("correct",), []),  # nothing of the judge's in its mapping
]


@pytest.mark.parametrize("solution,status,flags", GPU_EXPECTED)
def test_gpu_status_and_flags(gpu_run, solution, status, flags):
    result = gpu_run[0][solution]
    assert result["status"] in status, result["error"]
    assert set(flags) <= set(result["flags"]), result["flags"]


def test_the_run_ends_in_less_than_its_pairs_timeouts(gpu_run):
    """No stall: every pair ends with one status of its own, well inside what its timeouts add up to."""
    results, wall_s = gpu_run
    assert "harness_error" not in {r["status"] for r in results.values()}, results
    assert wall_s < len(results) * TIMEOUT_S, wall_s


def test_a_forged_clock_cannot_stretch_the_timing(gpu_run):
    result = gpu_run[0]["forges_cuda_clock"]
    assert result["phases_s"]["timing"] < 5.0 + 2.0 + 24 * 2.0, result["phases_s"]  # max_timing_s, pause, re-check
    assert result["new_batch"] is None or result["new_batch"] <= 64, result["new_batch"]  # not ~1000 calls a window


def test_memory_the_candidate_took_is_never_blamed_on_the_reference(gpu_run, tmp_path):
    """A candidate that hoards or leaks GPU memory fails only if someone runs out: then it is its runtime_error
    (its own allocation, or the reference side's, naming what the candidate held), never the reference's or the
    harness's. Nobody may run out here (the reference side's caches already hold what it needs): then it is correct."""
    results, _ = judge("tests/fixtures/problems/fx_relu.py", [HERE / "cuda" / "keeps_every_output.py"], tmp_path,
                       "--set", "batch_size=1024", "--set", "dim=262144")  # 1 GiB a call, kept
    for result in (gpu_run[0]["hoards_gpu_memory"], results["keeps_every_output"]):
        assert result["status"] in ("correct", "runtime_error"), result
        reason = result["error"] or ""
        assert "reference's timing worker failed" not in reason or "candidate's worker held" in reason, reason


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="suspected hole (session 55, unverified on a GPU): every call captured into a graph reads "
                          "the same inputs, so a forward may capture its work on few of them")
def test_a_forward_that_skips_work_while_captured_is_not_timed_faster(gpu_run):
    result = gpu_run[0]["captures_one_call_in_four"]
    if result["new_timer"] != "cuda_graph":  # then the candidate does not test the hole: a failure, not an xfail
        pytest.fail(f"timed by {result['new_timer']}, not a graph: {result}")
    assert not (result["status"] == "correct" and result["speedup"] > 1.5), result


def test_a_cache_by_pointer_and_version_is_not_timed_faster(tmp_path):
    """The calls of one sample read the same inputs: a cache keyed on their pointer and version must still gain nothing
    (suspected in session 55; an xfail until it passed on the H200 in session 61)."""
    results, _ = judge("tests/fixtures/problems/fx_relu.py", [HERE / "cuda" / "caches_by_version.py"], tmp_path,
                       "--set", "batch_size=4096", "--set", "dim=32768")  # 512 MiB: a 0.2+ ms call, honestly
    result = results["caches_by_version"]
    assert not (result["status"] == "correct" and result["speedup"] > 1.5), result


def test_honest_kernel_is_not_flagged(gpu_run):
    assert not {"no_custom_kernel", "timer_tampering"} & set(gpu_run[0]["custom_relu_kernel"]["flags"])


def test_side_stream_work_is_timed(gpu_run):
    assert gpu_run[0]["side_stream_work"]["speedup"] < 0.5  # 50 relus on a side stream cost what they cost


def test_integer_outputs_on_the_gpu(tmp_path):
    """KernelBench's 51_Argmax crashed the judge on a GPU (an int64 matmul for the roofline): an int64 output."""
    results, _ = judge(str(FIXTURES / "problems" / "fx_argmax.py"), sorted((FIXTURES / "solutions" / "fx_argmax").iterdir()),
                       tmp_path)
    assert results["aa_reference"]["status"] == "correct", results["aa_reference"]["error"]
    assert results["aa_reference"]["sol_pct"] is not None
    assert results["argmin"]["status"] == "incorrect" and "compared exactly" in results["argmin"]["error"]


def test_bfloat16_gemm_is_exposed(tmp_path):
    results, _ = judge("matmul_sigmoid_sum", [HERE / "cuda" / "bfloat16_matmul.py"], tmp_path,
                       "--set", "input_size=8192", "--set", "hidden_size=8192")
    result = results["bfloat16_matmul"]
    assert result["status"] == "incorrect" or "reduced_precision" in result["flags"], result
