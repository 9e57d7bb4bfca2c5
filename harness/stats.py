"""Statistics of a timed pair: medians, speedup, its bootstrap CI, the stopping rule and the tie rule."""
from __future__ import annotations

import random
import time
from typing import Callable

import numpy as np

TIE_BAND = (0.98, 1.02)


def speedup_with_ci(ref_ms: list, new_ms: list, resamples: int = 2000, seed: int = 0) -> dict:
    """Median per side, speedup = median(ref)/median(new), and a paired bootstrap 95% CI over rounds.

    Resampling whole rounds keeps each round's ref and new sample together, so drift that hits both
    sides of a round cancels (the CI is that of the per-round log ratios' effect on the ratio of medians).
    """
    ref, new = np.asarray(ref_ms, dtype=float), np.asarray(new_ms, dtype=float)
    speedup = float(np.median(ref) / np.median(new))
    rng = np.random.default_rng(seed)  # fixed: the CI is a pure function of the samples
    idx = rng.integers(0, len(ref), size=(resamples, len(ref)))
    ratios = np.median(ref[idx], axis=1) / np.median(new[idx], axis=1)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return {
        "ref_ms": float(np.median(ref)),
        "new_ms": float(np.median(new)),
        "speedup": speedup,
        # The percentile interval of a median can exclude its own point estimate by a hair; widen to it.
        "speedup_ci_low": float(min(low, speedup)),
        "speedup_ci_high": float(max(high, speedup)),
    }


def ci_is_tight(stats: dict, target_pct: float) -> bool:
    """True when the speedup's CI lies within +-target_pct percent of the speedup."""
    s = stats["speedup"]
    return stats["speedup_ci_high"] <= s * (1 + target_pct / 100) and stats["speedup_ci_low"] >= s * (1 - target_pct / 100)


def is_tie(stats: dict) -> bool:
    """A speedup inside [0.98, 1.02] whose CI contains 1 is reported as a tie, not a win or a loss."""
    return (TIE_BAND[0] <= stats["speedup"] <= TIE_BAND[1]
            and stats["speedup_ci_low"] <= 1.0 <= stats["speedup_ci_high"])


def alternate_rounds(ref_call: Callable[[], float], new_call: Callable[[], float], cfg: dict,
                     rng: random.Random, before_round: Callable[[int], None] = lambda i: None,
                     clock: Callable[[], float] = time.monotonic,
                     round_kept: Callable[[], bool] = lambda: True) -> tuple[list, list, bool]:
    """Rounds of one sample per side in random order, until the speedup's CI is tight or a cap is hit.

    `before_round(i)` runs before round i (new input contents, checks of the previous round's output);
    `round_kept()` after each round: a round it rejects (another process used the GPU) is dropped.
    Stops after at least min_rounds and min_timing_s of sampled time per side, once the CI is within
    +-target_ci_pct; gives up at max_rounds or after max_timing_s seconds of `clock`, the judge's own:
    a cap on the workers' reported samples would let a forged clock keep the rounds going for ever.
    Returns both sides' samples (ms) and whether the CI reached the target (never from fewer than
    min_rounds rounds).
    """
    ref_ms, new_ms = [], []
    calls = {"ref": (ref_call, ref_ms), "new": (new_call, new_ms)}
    deadline = clock() + cfg["max_timing_s"]

    def tight() -> bool:
        return len(ref_ms) >= cfg["min_rounds"] and \
            ci_is_tight(speedup_with_ci(ref_ms, new_ms, cfg["bootstrap_samples"]), cfg["target_ci_pct"])

    attempts = 0  # rounds run, dropped ones included: the judge's deadline holds even when every round is dropped
    while len(ref_ms) < cfg["max_rounds"] and attempts < 2 * cfg["max_rounds"] and (not attempts or clock() < deadline):
        attempts += 1
        before_round(len(ref_ms))
        for side in rng.sample(["ref", "new"], 2):
            call, samples = calls[side]
            samples.append(call())
        if not round_kept():
            ref_ms.pop(), new_ms.pop()
            continue
        enough = len(ref_ms) >= cfg["min_rounds"] and min(sum(ref_ms), sum(new_ms)) >= cfg["min_timing_s"] * 1e3
        if enough and len(ref_ms) % 5 == 0 and tight():
            break
    return ref_ms, new_ms, tight()
