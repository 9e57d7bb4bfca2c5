"""The GPU's cheats (test_adversarial_gpu.py's set, on fx_relu) judged under --preset rl through the library API and
through the service (its judging core, runner.service.Service: HTTP carries the same Result, test_serve.py): the
statuses and flags run.py gives them (GPU_EXPECTED)."""
import pytest
from support import service_results
from test_adversarial_gpu import GPU_EXPECTED, ROOT, TIMEOUT_S, gpu_set

pytestmark = pytest.mark.gpu
PROBLEM = ROOT / "tests" / "fixtures" / "problems" / "fx_relu.py"
SETTINGS = {"timeout": TIMEOUT_S, "kill_grace_s": 1}  # the hung kernel's pair ends in seconds, as in run.py's set


def by_candidate(results) -> dict:
    """{candidate's file stem: Result as JSON}."""
    return {r["solution_path"].rsplit("/", 1)[-1].removesuffix(".py"): r for r in results}


@pytest.fixture(scope="module")
def api_results():
    from harness import evaluate_many

    pairs = [(PROBLEM, path) for path in gpu_set()]
    return by_candidate(r.to_dict() for r in evaluate_many(pairs, preset="rl", settings=SETTINGS))


@pytest.fixture(scope="module")
def service_rl_results(tmp_path_factory):
    from harness.runner import environment
    from harness.runner.service import Service

    # the limits are the service's, so its warm judges take these jobs (a job's own limits get a judge of its own)
    service = Service(tmp_path_factory.mktemp("state"), None, {"device": "cuda", **SETTINGS}, ["cuda:0"],
                      environment.probe_environment("cuda"))
    problem, paths = PROBLEM.read_text(), gpu_set()
    jobs = [(problem, path.read_text(), {"preset": "rl"}) for path in paths]
    results = service_results(service, jobs, 900, drain_s=120)
    return {path.stem: result or {"status": "not done", "flags": [], "error": None}
            for path, result in zip(paths, results)}


@pytest.mark.parametrize("solution,status,flags", GPU_EXPECTED)
def test_the_library_api_under_rl_gives_run_pys_verdicts(api_results, solution, status, flags):
    result = api_results[solution]
    assert result["status"] in status and result["preset"] == "rl", (result["status"], result["error"])
    assert set(flags) <= set(result["flags"]), result["flags"]


@pytest.mark.parametrize("solution,status,flags", GPU_EXPECTED)
def test_the_service_under_rl_gives_run_pys_verdicts(service_rl_results, solution, status, flags):
    result = service_rl_results[solution]
    assert result["status"] in status, (result["status"], result["error"])
    assert set(flags) <= set(result["flags"]), result["flags"]


def test_no_pair_of_the_set_is_a_harness_error_under_rl(api_results, service_rl_results):
    for results in (api_results, service_rl_results):
        assert "harness_error" not in {r["status"] for r in results.values()}, results
        assert len(results) == len(gpu_set())
