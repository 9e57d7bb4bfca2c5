"""The service's core (harness/runner/service.py) without HTTP: a job is checked and journaled before it is
acknowledged, its Result written once, and a service started on the same folder takes up what was left."""
import json

import pytest

from support import FAST_CONFIG, FIXTURES, service_results

RELU = (FIXTURES / "problems" / "fx_relu.py").read_text()
HONEST = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clamp(min=0)\n"


@pytest.fixture(scope="module")
def env():
    from harness.runner import environment

    return environment.probe_environment("cpu")


def test_jobs_are_checked_journaled_and_taken_up_again(tmp_path, env):
    from harness.common.errors import UserError
    from harness.common.records import Result
    from harness.runner.service import Job, Service

    service = Service(tmp_path, str(FAST_CONFIG), {"device": "cpu"}, ["cpu"], env)
    with pytest.raises(UserError, match="ModelNew"):
        service.submit(RELU, "x = 1")
    with pytest.raises(UserError, match="no absolute path"):
        service.submit("/etc/hostname", HONEST)
    with pytest.raises(UserError, match="may not set device"):
        service.submit(RELU, HONEST, {"settings": {"device": "cuda"}})
    first, second = service.submit(RELU, HONEST), service.submit(RELU, HONEST, {"preset": "rl"})
    assert json.loads((tmp_path / "jobs" / f"{first}.json").read_text())["candidate"] == HONEST
    assert service.status(first) == {"id": first, "state": "queued"} and service.status("nope") is None
    service.record(service.pending.get(), Result(problem="fx_relu", solution="s", status="correct"))
    assert service.status(first)["result"]["status"] == "correct"
    again = Service(tmp_path, str(FAST_CONFIG), {"device": "cpu"}, ["cpu"], env)
    assert again.recovered == 1 and again.pending.get().id == second  # the unfinished one, and only it
    assert again.job_config(Job(second, RELU, HONEST, {"preset": "rl"}, 0.0)).correctness.trials == 2


def test_a_job_that_builds_an_extension_is_built_before_a_device_takes_it(tmp_path, env):
    """The build stage (as run.py's): a candidate whose extension does not compile ends there, with no judge."""
    import time

    from harness.runner.service import Service

    config = tmp_path / "prebuild.yaml"
    config.write_text(FAST_CONFIG.read_text() + f"prebuild: on\ncompile_timeout: 300\nbuild_cache_dir: {tmp_path / 'b'}\n")
    service = Service(tmp_path / "state", str(config), {"device": "cpu"}, ["cpu"], env)
    service.start()
    try:
        broken = service.submit(RELU, (FIXTURES / "builds" / "broken_cpp.py").read_text())
        assert service.health()["building"] == 1
        deadline = time.monotonic() + 600
        while service.status(broken)["state"] != "done" and time.monotonic() < deadline:
            time.sleep(0.2)
        result = service.status(broken)["result"]
    finally:
        service.drain(timeout=60)
    assert result["status"] == "compile_error" and result["error"].startswith("build stage")
    assert "build_stage" in result["phases_s"] and "judge_start" not in result["phases_s"]
    assert service.health()["building"] == 0


def test_a_service_of_two_devices_judges_on_both(tmp_path, env):
    """Each device's thread has its own judges and one log folder: their logs once shared names (harness_error)."""
    from harness.runner.service import Service

    service = Service(tmp_path, str(FAST_CONFIG), {"device": "cpu"}, ["cpu", "cpu"], env)
    results = service_results(service, [(RELU, HONEST, None)] * 4, 300)
    assert [(r or {}).get("status") for r in results] == ["correct"] * 4
    assert len(list((tmp_path / "run" / "logs").glob("*_*.judge.log"))) >= 4
