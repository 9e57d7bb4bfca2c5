"""Every misbehaving fixture candidate maps to exactly one status (CPU, through the real runner)."""
import pytest

from conftest import FAST_CONFIG, FIXTURES
from harness import discover, runner
from harness.config import build_config

EXPECTED = {
    "correct_torch": ("correct", None),
    "aa_reference": ("correct", None),
    "response_correct": ("correct", None),
    "wrong_values": ("incorrect", "outside atol"),
    "only_unit_interval": ("incorrect", "wide inputs"),
    "returns_tuple": ("incorrect", "returned a tuple"),
    "returns_subclass": ("incorrect", "no subclass"),
    "wrong_dtype": ("incorrect", "dtype torch.float64"),
    "wrong_shape": ("incorrect", "shape"),
    "partial_nan": ("incorrect", "NaN"),
    "mutates_input": ("incorrect", "changed its inputs"),
    "syntax_error": ("compile_error", "SyntaxError"),
    "no_modelnew": ("compile_error", "no class ModelNew"),
    "response_no_code": ("compile_error", "no fenced code block"),
    "build_fails_in_init": ("compile_error", "-fno-such-option-anywhere"),
    "raises_in_init": ("runtime_error", "broken constructor"),
    "raises_in_forward": ("runtime_error", "broken forward"),
    "wrong_init_args": ("runtime_error", "TypeError"),
    "hogs_memory": ("runtime_error", "forward raised"),
    "infinite_loop": ("timeout", "no reply"),
    "endless_output": ("timeout", "no reply"),
    "slow_import": ("timeout", "'import'"),
    "os_exit": ("crash", "worker died"),
    "forges_a_verdict": ("crash", "malformed reply"),
    "segfault": ("crash", "SIGSEGV"),
    "needs_cuda": ("skipped", "needs a CUDA GPU"),
    "cuda_at_runtime": ("skipped", "needs a CUDA GPU"),
}


@pytest.fixture(scope="module")
def relu_results(tmp_path_factory):
    config = build_config(str(FAST_CONFIG), {"device": "cpu"})
    env = runner.probe_environment()
    ctx = runner.new_context(config, "cpu", {}, tmp_path_factory.mktemp("run"), env)
    solutions = sorted((FIXTURES / "solutions" / "fx_relu").iterdir())
    pairs = discover.find_pairs([str(FIXTURES / "problems" / "fx_relu.py")], [str(s) for s in solutions])
    return {r.solution: r for r in runner.run_pairs(pairs, ctx, resume=False)}, ctx


def test_every_fixture_has_an_expectation(relu_results):
    assert set(relu_results[0]) == set(EXPECTED)


@pytest.mark.parametrize("solution", sorted(EXPECTED))
def test_status_and_reason(relu_results, solution):
    result = relu_results[0][solution]
    status, reason = EXPECTED[solution]
    assert result.status == status, result.error
    if reason:
        assert reason in result.error
    else:
        assert result.error is None


def test_mutation_is_flagged(relu_results):
    assert "input_mutated" in relu_results[0]["mutates_input"].flags


def test_correct_result_carries_timing_and_samples(relu_results):
    r = relu_results[0]["correct_torch"]
    assert r.ref_ms > 0 and r.new_ms > 0
    assert len(r.ref_samples_ms) == len(r.new_samples_ms) == r.timing_rounds >= 4
    assert r.speedup_ci_low <= r.speedup <= r.speedup_ci_high
    assert r.gbps > 0 and r.trials == 3 and r.ref_timer == r.new_timer == "perf_counter"
    assert r.sol_pct > 0 and r.floor_ms > 0 and r.cache == "hot" and r.tie in (True, False)
    assert len(r.new_wall_ms) == len(r.ref_wall_ms) == r.timing_rounds
    assert r.max_abs_err == 0.0


def test_endless_output_is_bounded(relu_results):
    _, ctx = relu_results
    log = (ctx.run_dir / "logs" / "fx_relu__endless_output.worker.log").read_text()
    assert "bytes of output dropped" in log and len(log) < 8192


def test_one_line_per_pair_in_results_jsonl(relu_results):
    from harness import store

    records, torn = store.read_jsonl(relu_results[1].run_dir / "results.jsonl")
    assert torn == 0 and sorted(r["solution"] for r in records) == sorted(EXPECTED)
