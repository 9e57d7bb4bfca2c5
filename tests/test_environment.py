"""The machine: devices resolved strictly (always an indexed cuda:N), and the default command's device."""
import json
from types import SimpleNamespace

import pytest

from support import FIXTURES, NoJudges
from harness.runner import cli, environment, judges, runner
from harness.common import store
from harness.common.records import Result

ONE_GPU = {"cuda_available": True, "torch": "x", "gpus": ["H100"], "capabilities": ["9.0"], "cuda_version": "13.0"}
TWO_GPUS = {"cuda_available": True, "torch": "x", "gpus": ["H100", "H100"]}
NO_GPU = {"cuda_available": False, "torch": "x", "gpus": [], "capabilities": [], "cuda_version": None}


def test_every_gpu_device_is_indexed():
    """Workers call torch.cuda.set_device, which refuses a bare 'cuda': auto and cuda must become cuda:0."""
    assert environment.resolve_device("auto", ONE_GPU) == "cuda:0"
    assert environment.resolve_device("cuda", ONE_GPU) == "cuda:0"
    assert environment.resolve_device("cuda:0", ONE_GPU) == "cuda:0"
    assert environment.resolve_device("auto", NO_GPU) == "cpu"
    with pytest.raises(environment.UsageError, match="only 1 GPU"):
        environment.resolve_device("cuda:1", ONE_GPU)
    with pytest.raises(environment.UsageError, match="no CUDA GPU"):
        environment.resolve_device("cuda", NO_GPU)


def test_the_default_command_hands_judges_an_indexed_gpu(tmp_path, monkeypatch):
    """`run.py --problem P` with a GPU visible (the probe faked) and no --device: every judge job names cuda:0."""
    jobs = []

    def fake_hand_to_judge(pair, source, ctx, starter=None, on_stage=lambda stage: None):
        jobs.append(ctx.device)
        return Result(problem=pair.problem, solution=pair.solution, status="correct")

    monkeypatch.setattr(environment, "probe_environment", lambda device: ONE_GPU)
    monkeypatch.setattr(runner, "hand_to_judge", fake_hand_to_judge)
    monkeypatch.setattr(judges, "JudgeStarter", lambda *args, **kwargs: NoJudges())
    code = cli.main(["--problem", str(FIXTURES / "problems" / "fx_relu.py"), "--solution",
                     str(FIXTURES / "solutions" / "fx_relu" / "correct_torch.py"), "--out", str(tmp_path)])
    assert code == 0 and jobs == ["cuda:0"]
    (record,) = store.read_jsonl(tmp_path / "results.jsonl")[0]
    assert record["device"] == "cuda:0" and record["gpu"] == "H100"


def test_resolve_devices():
    assert environment.resolve_devices("all", TWO_GPUS) == ["cuda:0", "cuda:1"]
    assert environment.resolve_devices("0,cuda:1", TWO_GPUS) == ["cuda:0", "cuda:1"]
    for bad in ("0,0", "2", ""):
        with pytest.raises(environment.UsageError):
            environment.resolve_devices(bad, TWO_GPUS)
    with pytest.raises(environment.UsageError, match="differ"):
        environment.resolve_devices("all", {**TWO_GPUS, "gpus": ["H100", "A100"]})
    with pytest.raises(environment.UsageError, match="no CUDA GPU"):
        environment.resolve_devices("all", {**TWO_GPUS, "cuda_available": False})


def test_a_cpu_run_reads_torchs_versions_without_the_probe():
    """--device cpu skips the child's import of torch: the versions it reads are the ones torch reports."""
    light, full = environment.probe_environment("cpu"), environment.probe_environment("auto")
    assert (light["torch"], light["cuda_version"]) == (full["torch"], full["cuda_version"])
    assert light["gpus"] == [] and light["cuda_available"] is False


def test_auto_and_cuda_probe_the_gpus_and_only_cpu_skips_the_probe(monkeypatch):
    """A run with the default device (auto) must see the GPUs: a change that read `auto` as the CPU ran a whole GPU
    sweep on the CPU."""
    probed = []

    def fake_run(*args, **kwargs):
        probed.append(True)
        return SimpleNamespace(returncode=0, stdout=json.dumps(ONE_GPU) + "\n", stderr="")

    monkeypatch.setattr(environment.subprocess, "run", fake_run)
    for device in ("auto", "cuda", "cuda:0"):
        assert environment.probe_environment(device)["cuda_available"], device
    assert len(probed) == 3
    environment.probe_environment("cpu")
    assert len(probed) == 3
