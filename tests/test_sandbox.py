import pytest

from harness.common import channel
from harness.common.extensions import BUILDING
from harness.judge.sandbox import BoundedLog, Sandbox, WorkerFailure


def test_bounded_log_keeps_head_and_tail():
    log = BoundedLog(20)
    for i in range(100):
        log.feed(f"{i:03d}".encode())
    text = log.text()
    assert text.startswith("0000010020")  # the first 10 bytes
    assert text.endswith("6097098099")  # the last 10 bytes
    assert "280 bytes of output dropped" in text


def test_short_output_is_kept_whole():
    log = BoundedLog(100)
    log.feed(b"hello ")
    log.feed(b"world")
    assert log.text() == "hello world"


# Its output is no tensor: a CPU tensor's reply needs torch's shared-memory manager, which a worker forked from
# pytest (not from a fresh judge) may find closed.
SLOW_BUILDER = f'''
import os, time
import torch


class ModelNew(torch.nn.Module):
    def forward(self):
        open("{BUILDING}", "w").close()  # as the worker's wrapper of torch's builders does, in the worker's folder
        time.sleep(6)
        os.unlink("{BUILDING}")
        return "built"
'''


def first_call(tmp_path, build_grace: float) -> channel.Reply:
    """A candidate's first call, 6 s of "building" in it, under a 3 s request limit."""
    path = tmp_path / "slow_builder.py"
    path.write_text(SLOW_BUILDER)
    sandbox = Sandbox({"CUDA_VISIBLE_DEVICES": ""}, 1 << 16, 1.0)
    try:
        sandbox.greet("cpu", False, {})
        assert isinstance(sandbox.request("import", 60, path=str(path), source=SLOW_BUILDER, overrides={},
                                          module_name="candidate_module"), channel.Ok)
        assert isinstance(sandbox.request("construct", 60, init_args=[], init_seed=0), channel.Ok)
        return sandbox.request("run", 3.0, build_grace=build_grace, inputs=[], poison_sizes=[], seed=0)
    finally:
        sandbox.close()


def test_a_call_that_builds_gets_the_builds_time_and_no_more(tmp_path):
    """A generation that builds in its first forward call is not a timeout; the grace is the build's, not the call's."""
    assert isinstance(first_call(tmp_path, build_grace=60.0), channel.Ok)
    with pytest.raises(WorkerFailure, match=r"within 3 s \(and \d+ s of an extension build\)"):
        first_call(tmp_path, build_grace=1.0)  # a build longer than the grace
    with pytest.raises(WorkerFailure, match=r"no reply to 'run' within 3 s; worker stopped"):
        first_call(tmp_path, build_grace=0.0)
