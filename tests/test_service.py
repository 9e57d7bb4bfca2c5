"""The service's core (harness/runner/service.py) without HTTP: a job is checked and journaled before it is
acknowledged, its Result written once, and a service started on the same folder takes up what was left."""
import json

import pytest

from support import FAST_CONFIG, FIXTURES

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
