"""Several devices: one evaluation at a time on each, every pair recorded once, devices resolved strictly."""
import threading
import time

import pytest

from conftest import FAST_CONFIG, FIXTURES
from harness import cli, discover, judges, runner, store
from harness.config import build_config
from harness.records import Result

TWO_GPUS = {"cuda_available": True, "torch": "x", "gpus": ["H100", "H100"]}


class NoJudges:
    def close(self):
        pass


def test_pairs_spread_over_devices_one_at_a_time(tmp_path, monkeypatch):
    busy, log, lock = set(), [], threading.Lock()

    def fake_evaluate(pair, source, early, key, ctx, *stages):
        with lock:
            assert ctx.device not in busy, "two evaluations at once on one device"
            busy.add(ctx.device)
        time.sleep(0.2)
        with lock:
            busy.discard(ctx.device)
            log.append(ctx.device)
        return Result(problem=pair.problem, solution=pair.solution, status="correct", key=key, device=ctx.device)

    monkeypatch.setattr(runner, "evaluate_pair", fake_evaluate)
    monkeypatch.setattr(judges, "JudgeStarter", lambda *args, **kwargs: NoJudges())  # no GPU here to start them on
    solutions = sorted((FIXTURES / "solutions" / "fx_relu").iterdir())
    pairs = discover.find_pairs([str(FIXTURES / "problems" / "fx_relu.py")], [str(s) for s in solutions])
    pairs = pairs + [discover.Pair(p.problem, p.problem_path, p.solution + "_again", p.solution_path) for p in pairs]
    config = build_config(str(FAST_CONFIG), {"device": "cpu"})
    ctx = runner.RunContext(config, "cuda:0", {}, tmp_path, 1, tmp_path / "builds", ("cuda:0", "cuda:1"))
    started = time.monotonic()
    results = runner.run_pairs(pairs, ctx, resume=False)
    assert time.monotonic() - started < 0.2 * len(pairs) * 0.75  # the two devices overlapped
    assert [r.solution for r in results] == [p.solution for p in pairs]  # returned in pair order
    assert set(log) == {"cuda:0", "cuda:1"}
    records, torn = store.read_jsonl(tmp_path / "results.jsonl")
    assert torn == 0 and sorted(r["solution"] for r in records) == sorted(p.solution for p in pairs)


ONE_GPU = {"cuda_available": True, "torch": "x", "gpus": ["H100"], "capabilities": ["9.0"], "cuda_version": "13.0"}
NO_GPU = {"cuda_available": False, "torch": "x", "gpus": [], "capabilities": [], "cuda_version": None}


def test_every_gpu_device_is_indexed():
    """Workers call torch.cuda.set_device, which refuses a bare 'cuda': auto and cuda must become cuda:0."""
    assert runner.resolve_device("auto", ONE_GPU) == "cuda:0"
    assert runner.resolve_device("cuda", ONE_GPU) == "cuda:0"
    assert runner.resolve_device("cuda:0", ONE_GPU) == "cuda:0"
    assert runner.resolve_device("auto", NO_GPU) == "cpu"
    with pytest.raises(runner.UsageError, match="only 1 GPU"):
        runner.resolve_device("cuda:1", ONE_GPU)
    with pytest.raises(runner.UsageError, match="no CUDA GPU"):
        runner.resolve_device("cuda", NO_GPU)


def test_the_default_command_hands_judges_an_indexed_gpu(tmp_path, monkeypatch):
    """`run.py --problem P` with a GPU visible (the probe faked) and no --device: every judge job names cuda:0."""
    jobs = []

    def fake_run_judge(pair, source, ctx, starter=None, on_stage=lambda stage: None):
        jobs.append(ctx.device)
        return Result(problem=pair.problem, solution=pair.solution, status="correct")

    monkeypatch.setattr(runner, "probe_environment", lambda: ONE_GPU)
    monkeypatch.setattr(runner, "run_judge", fake_run_judge)
    monkeypatch.setattr(judges, "JudgeStarter", lambda *args, **kwargs: NoJudges())
    code = cli.main(["--problem", str(FIXTURES / "problems" / "fx_relu.py"), "--solution",
                     str(FIXTURES / "solutions" / "fx_relu" / "correct_torch.py"), "--out", str(tmp_path)])
    assert code == 0 and jobs == ["cuda:0"]
    (record,) = store.read_jsonl(tmp_path / "results.jsonl")[0]
    assert record["device"] == "cuda:0" and record["gpu"] == "H100"


def test_resolve_devices():
    assert runner.resolve_devices("all", TWO_GPUS) == ["cuda:0", "cuda:1"]
    assert runner.resolve_devices("0,cuda:1", TWO_GPUS) == ["cuda:0", "cuda:1"]
    for bad in ("0,0", "2", ""):
        with pytest.raises(runner.UsageError):
            runner.resolve_devices(bad, TWO_GPUS)
    with pytest.raises(runner.UsageError, match="differ"):
        runner.resolve_devices("all", {**TWO_GPUS, "gpus": ["H100", "A100"]})
    with pytest.raises(runner.UsageError, match="no CUDA GPU"):
        runner.resolve_devices("all", {**TWO_GPUS, "cuda_available": False})


def test_keys_do_not_depend_on_the_gpu_index(tmp_path):
    config = build_config(str(FAST_CONFIG), {"device": "cpu"})
    (pair,) = discover.find_pairs([str(FIXTURES / "problems" / "fx_relu.py")],
                                  [str(FIXTURES / "solutions" / "fx_relu" / "correct_torch.py")])
    keys = {runner.pair_key(pair, "src", runner.RunContext(config, d, {}, tmp_path, 1, tmp_path)) for d in ("cuda:0", "cuda:1")}
    assert len(keys) == 1
