"""Scheduling: several devices take one evaluation at a time each; every pair recorded once; keys per GPU model."""
import threading
import time

from support import FAST_CONFIG, FIXTURES, NoJudges
from harness.common import discover, store
from harness.runner import judges, runner
from harness.common.config import build_config
from harness.common.records import Result


def test_pairs_spread_over_devices_one_at_a_time(tmp_path, monkeypatch):
    busy, log, lock = set(), [], threading.Lock()
    overlapped = threading.Event()  # two devices busy at once: seen, not inferred from the wall time (host load)

    def fake_evaluate(plan, ctx, *stages):
        with lock:
            assert ctx.device not in busy, "two evaluations at once on one device"
            busy.add(ctx.device)
            if len(busy) > 1:
                overlapped.set()
        time.sleep(0.2)
        with lock:
            busy.discard(ctx.device)
            log.append(ctx.device)
        return Result(problem=plan.pair.problem, solution=plan.pair.solution, status="correct", key=plan.key,
                      device=ctx.device)

    monkeypatch.setattr(runner, "evaluate_pair", fake_evaluate)
    monkeypatch.setattr(judges, "JudgeStarter", lambda *args, **kwargs: NoJudges())  # no GPU here to start them on
    solutions = sorted((FIXTURES / "solutions" / "fx_relu").iterdir())
    pairs = discover.find_pairs([str(FIXTURES / "problems" / "fx_relu.py")], [str(s) for s in solutions])
    pairs = pairs + [discover.Pair(p.problem, p.problem_path, p.solution + "_again", p.solution_path) for p in pairs]
    config = build_config(str(FAST_CONFIG), {"device": "cpu"})
    ctx = runner.RunContext(config, "cuda:0", {}, tmp_path, 1, tmp_path / "builds", ("cuda:0", "cuda:1"))
    results = runner.run_pairs(pairs, ctx, resume=False)
    assert overlapped.is_set()  # the two devices worked at once
    assert [r.solution for r in results] == [p.solution for p in pairs]  # returned in pair order
    assert set(log) == {"cuda:0", "cuda:1"}
    records, torn = store.read_jsonl(tmp_path / "results.jsonl")
    assert torn == 0 and sorted(r["solution"] for r in records) == sorted(p.solution for p in pairs)


def test_keys_do_not_depend_on_the_gpu_index(tmp_path):
    config = build_config(str(FAST_CONFIG), {"device": "cpu"})
    (pair,) = discover.find_pairs([str(FIXTURES / "problems" / "fx_relu.py")],
                                  [str(FIXTURES / "solutions" / "fx_relu" / "correct_torch.py")])
    keys = {runner.pair_key(pair, "src", runner.RunContext(config, d, {}, tmp_path, 1, tmp_path)) for d in ("cuda:0", "cuda:1")}
    assert len(keys) == 1


def test_a_resumed_run_with_every_pair_recorded_starts_no_judge(tmp_path, monkeypatch):
    def no_judge(*args, **kwargs):
        raise AssertionError("a judge was started for a run with nothing left to judge")

    monkeypatch.setattr(judges, "JudgeStarter", no_judge)
    config = build_config(str(FAST_CONFIG), {"device": "cpu"})
    (pair,) = discover.find_pairs([str(FIXTURES / "problems" / "fx_relu.py")],
                                  [str(FIXTURES / "solutions" / "fx_relu" / "correct_torch.py")])
    ctx = runner.RunContext(config, "cpu", {}, tmp_path, 1, tmp_path / "builds")
    key = runner.pair_key(pair, discover.read_source(pair.solution_path), ctx)
    store.append_jsonl(tmp_path / "results.jsonl", Result(problem=pair.problem, solution=pair.solution,
                                                          status="correct", key=key).to_dict())
    seen = []
    (result,) = runner.run_pairs([pair], ctx, resume=True, on_result=lambda p, r: seen.append(r.status))
    assert result.key == key and seen == ["correct"]
    assert len(store.read_jsonl(tmp_path / "results.jsonl")[0]) == 1  # nothing appended
