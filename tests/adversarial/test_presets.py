"""The cheats that only the trials and the timed rounds catch, judged through the library API under `--preset rl`
(fewer trials and rounds) and through the HTTP service under it: the same statuses, reasons and defence flags as
through run.py (test_adversarial.py)."""
import pytest

from test_adversarial import CONTROL, EXPECTED, HERE, ROOT

CHEATS = ["caches_by_content", "caches_by_pointer", "returns_its_first_output", "returns_a_stale_view",
          "returns_uninitialized", "defers_work", "patches_the_timer", "forges_a_stopped_clock", "mutates_input",
          "writes_over_its_input_when_timed", "only_unit_interval", "computes_in_bfloat16", "patches_the_checks",
          "searches_gc_for_reference", "forges_a_verdict", "lower_precision_within_tolerance"]
NOISE_FLAGS = {"noisy_timing"}  # about the CI's width, which the preset widens on purpose


@pytest.fixture(scope="module")
def rl_results():
    from harness import evaluate_many

    problem = ROOT / "tests" / "fixtures" / "problems" / "fx_relu.py"
    pairs = [(problem, HERE / "cpu" / f"{name}.py") for name in CHEATS] + [(problem, CONTROL / "correct_torch.py")]
    results = list(evaluate_many(pairs, device="cpu", preset="rl", settings={"cold_cache": False, "kill_grace_s": 1}))
    return {r.solution.rsplit("_", 1)[0]: r for r in results}


def test_the_rl_preset_is_stated_and_takes_fewer_trials(rl_results):
    control = rl_results["correct_torch"]
    assert control.status == "correct" and control.preset == "rl" and control.trials == 3
    assert control.timing_rounds <= 40


@pytest.mark.parametrize("name", CHEATS)
def test_the_rl_preset_catches_what_run_py_catches(rl_results, name):
    result = rl_results[name]
    status, reason, flags = EXPECTED[name]
    assert result.status == status, result.error
    assert reason is None or reason in (result.error or "")
    assert set(flags) - NOISE_FLAGS <= set(result.flags), result.flags


@pytest.fixture(scope="module")
def service_results(tmp_path_factory):
    import signal

    from test_serve import start

    problem = (ROOT / "tests" / "fixtures" / "problems" / "fx_relu.py").read_text()
    proc, client = start(tmp_path_factory.mktemp("state"))
    try:
        ids = client.submit_batch([(problem, (HERE / "cpu" / f"{name}.py").read_text()) for name in CHEATS],
                                  preset="rl", settings={"cold_cache": False, "kill_grace_s": 1})
        return dict(zip(CHEATS, (client.wait(job_id, timeout=600) for job_id in ids)))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)


@pytest.mark.parametrize("name", CHEATS)
def test_the_service_catches_what_run_py_catches(service_results, name):
    result = service_results[name]
    status, reason, flags = EXPECTED[name]
    assert result["status"] == status, result["error"]
    assert reason is None or reason in (result["error"] or "")
    assert set(flags) - NOISE_FLAGS <= set(result["flags"]), result["flags"]
