"""A judged pair's stages and their deadlines, read by both the runner and the judge."""
from __future__ import annotations

from harness.common.config import Config

# timer_tampering must show again in CONFIRM_ROUNDS rounds after CONFIRM_PAUSE_S (judge_timing).
CONFIRM_PAUSE_S, CONFIRM_ROUNDS = 2.0, 10


def stage_deadlines(cfg: Config) -> dict:
    """Seconds each stage may last before the runner stops a stuck judge."""
    request, start = cfg.limits.timeout, cfg.limits.start_timeout
    trials, timing = cfg.correctness.total_trials, cfg.timing
    return {
        "start": start,  # a judge started ahead may still be starting
        "reference": start + 2 * request,  # CUDA started, the Model built
        "build": start + cfg.limits.compile_timeout + 2 * request,  # its extensions built
        "workers": start + cfg.limits.compile_timeout + 2 * request,  # a build in __init__ too
        # truth, reference, candidate, release per trial; an extension built in the candidate's first call
        "correctness": (trials + 2) * 4 * request + cfg.limits.compile_timeout,
        "timing_setup": 8 * request,  # inputs, warm-up, method, trace
        "timing": timing.max_timing_s + timing.gate_timing_s + CONFIRM_PAUSE_S + (2 * CONFIRM_ROUNDS + 4) * request
                  + (cfg.limits.compile_timeout if timing.compile_baseline else 0),
        "finish": 60 + 4 * cfg.limits.kill_grace_s,
    }
