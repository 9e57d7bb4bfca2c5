"""A pair's context (harness/judge/context.py): what its judge hands each phase."""
from support import FAST_CONFIG, pair_job


def test_the_judge_hands_its_phases_this_blocks_settings_and_its_own_parts():
    from harness.common.config import build_config
    from harness.judge.judge import PairJudge

    config = build_config(str(FAST_CONFIG), {"device": "cpu"})
    first = PairJudge(pair_job(config=config), (None, None), frozenset(), gated=True, worker_threads=3)
    ctx = first.context
    assert ctx.cfg is config and ctx.result is first.result and ctx.gated and ctx.worker_threads == 3
    assert ctx.reference is first.reference and ctx.workers is first.workers and ctx.memory is first.reference.memory
    assert first.trials.ctx is ctx
    confirming = PairJudge(pair_job(config=config, block=2), (None, None), frozenset()).context
    assert confirming.cfg.correctness.trials == 1 and confirming.cfg.timing.max_rounds == max(config.timing.min_rounds, config.timing.max_rounds // 2)
    ctx.note("seen once")
    ctx.note("seen once")
    assert first.result.notes == ["seen once"]
