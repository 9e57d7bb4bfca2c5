"""The stages of a judged pair, as the judge runs them and the runner holds each to a deadline: the one place both
sides read them from (the runner's judge_processes.follow_pair, the judge's PairJudge and PairTiming)."""
from __future__ import annotations

from harness.common.config import Config

# timer_tampering must show again in CONFIRM_ROUNDS rounds after a pause of CONFIRM_PAUSE_S (judge_timing).
CONFIRM_PAUSE_S, CONFIRM_ROUNDS = 2.0, 10


def stage_deadlines(cfg: Config) -> dict:
    """Seconds each stage of a judge may last before the runner stops it: the waits the stage is allowed,
    with room. Every worker request inside a stage has its own, shorter deadline in the judge; these
    catch a judge that is itself stuck (in a CUDA call, say)."""
    request, start = cfg.timeout, cfg.start_timeout
    trials = cfg.total_trials
    return {
        "start": start,  # a judge started ahead may still be importing torch and starting its workers
        "reference": start + 2 * request,  # the problem imported and Model built (CUDA started)
        "build": start + cfg.compile_timeout + 2 * request,  # the candidate imported (its extensions built)
        "workers": start + cfg.compile_timeout + 2 * request,  # both models constructed (a build in __init__ too)
        "correctness": (trials + 2) * 4 * request,  # per trial: float64 truth, reference, candidate call, release
        "timing_setup": 8 * request,  # timing inputs, warm-up, method choice and trace, both sides
        "timing": cfg.max_timing_s + cfg.gate_timing_s + CONFIRM_PAUSE_S + (2 * CONFIRM_ROUNDS + 4) * request
                  + (cfg.compile_timeout if cfg.compile_baseline else 0),
        "finish": 60 + 4 * cfg.kill_grace_s,
    }
