"""The runner's decisions per pair (harness/runner/runner.py), before any judge: what --resume matches on, and the pairs that
end before a process starts."""
from pathlib import Path

from support import FAST_CONFIG, ROOT
from harness.runner import runner
from harness.common.config import build_config
from harness.common.discover import Pair

PROBLEM = ROOT / "problems" / "sigmoid.py"


def context(device: str = "cpu", **changes) -> runner.RunContext:
    config = build_config(str(FAST_CONFIG), {"device": "cpu"}).replace(**changes)
    return runner.RunContext(config, device, {}, Path("."), 1, Path("."))


def pair(solution: str = "a", **overrides) -> Pair:
    return Pair("sigmoid", PROBLEM, solution, Path(f"{solution}.py"), overrides)


def test_the_resume_key_changes_with_what_changes_a_result_and_nothing_else():
    key = runner.pair_key(pair(), "source", context())
    assert runner.pair_key(pair(), "source", context()) == key
    assert runner.pair_key(pair(), "other source", context()) != key  # the candidate's code
    assert runner.pair_key(pair(batch_size=8), "source", context()) != key  # --set or a manifest entry's sizes
    assert runner.pair_key(pair(), "source", context(trials=9)) != key  # a measurement setting
    assert runner.pair_key(pair(), "source", context(results_dir="elsewhere")) == key  # where files go
    gpu = runner.pair_key(pair(), "source", context("cuda:0"))
    assert gpu != key and runner.pair_key(pair(), "source", context("cuda:1")) == gpu  # any GPU of the run's model


def test_a_manifest_entrys_sizes_win_over_the_runs():
    ctx = context()
    ctx.overrides = {"batch_size": 4, "dim": 8}
    assert runner.overrides_of(pair(batch_size=16), ctx) == {"batch_size": 16, "dim": 8}


def test_a_candidate_that_cannot_run_on_the_device_is_skipped_before_any_process(tmp_path):
    cuda_only = "from torch.utils.cpp_extension import load_inline\nload_inline('x', '', cuda_sources='__global__ void k(){}')"
    skipped = runner.skip_for_device(pair(), cuda_only, "cpu")
    assert skipped is not None and skipped.status.value == "skipped" and "device is cpu" in skipped.error
    assert runner.skip_for_device(pair(), "import torch", "cpu") is None
    missing = Pair("sigmoid", PROBLEM, "gone", tmp_path / "gone.py")
    source, early = runner.read_candidate(missing)
    assert source is None and early.status.value == "compile_error" and "cannot read candidate" in early.error
