"""Statistics of a timed pair: robust spreads, the paired speedup and its CI, the stopping rule and the tie rule."""
from __future__ import annotations

import math
import random
import statistics
import time
from typing import Callable

import numpy as np

from harness.common.config import Timing

TIE_BAND = (0.98, 1.02)
# Fewer pairs than this: their range holds the median too seldom (docs/decisions/paired-speedup-ci.md).
MIN_PAIRS = 5


def speedup_with_ci(ref_ms: list, new_ms: list) -> dict:
    """Medians per side, the paired speedup and its 95% CI: docs/decisions/paired-speedup-ci.md"""
    ref, new = np.asarray(ref_ms, dtype=float), np.asarray(new_ms, dtype=float)
    rounds = np.log(ref) - np.log(new)
    pairs = paired_means(rounds)
    middle = float(np.median(pairs))
    # Under MIN_PAIRS (a pair cut short by max_timing_s) the single rounds' range stands in.
    low, high = sign_test_bounds(pairs, middle) if len(pairs) >= MIN_PAIRS else (rounds.min(), rounds.max())
    speedup = math.exp(middle)
    return {
        "ref_ms": float(np.median(ref)),
        "new_ms": float(np.median(new)),
        "speedup": speedup,
        "speedup_ci_low": min(math.exp(low), speedup),
        "speedup_ci_high": max(math.exp(high), speedup),
    }


def sign_test_bounds(values: np.ndarray, middle: float) -> tuple[float, float]:
    """The median's 95% interval as two order statistics: a sign test widened for lag-1 correlation of the signs."""
    n = len(values)
    above = (values > middle).astype(float)
    r = min(max(lag1_correlation(above), 0.0), 0.9)
    half = 1.96 * math.sqrt(n * (1 + r) / (1 - r)) / 2
    ordered = np.sort(values)
    return ordered[max(0, math.floor(n / 2 - half - 0.5))], ordered[min(n - 1, math.ceil(n / 2 + half - 0.5))]


def paired_means(ratios: np.ndarray) -> np.ndarray:
    """The mean of each pair of consecutive log ratios (a single one stands alone)."""
    n = len(ratios) // 2 * 2
    return ratios if n == 0 else (ratios[0:n:2] + ratios[1:n:2]) / 2


def lag1_correlation(values: np.ndarray) -> float:
    """Correlation of consecutive values (0 for fewer than 3, or for constant ones)."""
    if len(values) < 3:
        return 0.0
    centred = values - values.mean()
    spread = float((centred * centred).sum())
    return float((centred[:-1] * centred[1:]).sum()) / spread if spread else 0.0


def with_resolution(stats: dict, resolution_pct: float) -> dict:
    """The CI widened by resolution_pct on each side: a process's own offset, which no round shows (docs/judging.md)."""
    low, high = 1 - resolution_pct / 100, 1 + resolution_pct / 100
    return {**stats, "speedup_ci_low": stats["speedup_ci_low"] * low,
            "speedup_ci_high": stats["speedup_ci_high"] * high}


def ci_is_tight(stats: dict, target_pct: float) -> bool:
    """Does the CI lie within +-target_pct percent of the speedup?"""
    s = stats["speedup"]
    return (stats["speedup_ci_high"] <= s * (1 + target_pct / 100)
            and stats["speedup_ci_low"] >= s * (1 - target_pct / 100))


def is_tie(stats: dict) -> bool:
    """A speedup in TIE_BAND whose CI holds 1 is a tie."""
    return (TIE_BAND[0] <= stats["speedup"] <= TIE_BAND[1]
            and stats["speedup_ci_low"] <= 1.0 <= stats["speedup_ci_high"])


def alternate_rounds(ref_call: Callable[[], float], new_call: Callable[[], float], timing: Timing,
                     rng: random.Random, before_round: Callable[[int], None] = lambda i: None,
                     clock: Callable[[], float] = time.monotonic,
                     round_kept: Callable[[], bool] = lambda: True,
                     undecided: Callable[[list, list], bool] | None = None) -> tuple[list, list, bool]:
    """Rounds until the CI is tight or a cap, then while `undecided`: (ref ms, new ms, tight); `clock`: the judge's."""
    ref_ms, new_ms = list[float](), list[float]()
    calls = {"ref": (ref_call, ref_ms), "new": (new_call, new_ms)}
    attempts = [0]  # dropped rounds count too, so the deadline holds when every round is dropped
    order, opened = list[str](), list[str]()

    def tight() -> bool:
        return len(ref_ms) >= timing.min_rounds and ci_is_tight(speedup_with_ci(ref_ms, new_ms), timing.target_ci_pct)

    def one_round() -> None:
        attempts[0] += 1
        before_round(len(ref_ms))
        order[:] = opening_order(rng, opened)
        for side in order:
            call, samples = calls[side]
            samples.append(call())
        if round_kept():
            opened.append(order[0])
        else:
            ref_ms.pop(), new_ms.pop()

    started = clock()
    deadline = started + timing.max_timing_s
    while (len(ref_ms) < timing.max_rounds and attempts[0] < 2 * timing.max_rounds
           and (not attempts[0] or clock() < deadline)):
        one_round()
        enough = len(ref_ms) >= timing.min_rounds and clock() - started >= timing.min_timing_s
        if enough and (len(ref_ms) - timing.min_rounds) % 5 == 0 and tight():  # at min_rounds, then every 5th
            break
    if undecided is not None and timing.gate_timing_s and len(ref_ms) >= 2 and undecided(ref_ms, new_ms):
        deadline, limit = clock() + timing.gate_timing_s, len(ref_ms) + timing.max_rounds
        while len(ref_ms) < limit and attempts[0] < 4 * timing.max_rounds and clock() < deadline:
            one_round()
            if len(ref_ms) % 5 == 0 and not undecided(ref_ms, new_ms):
                break
    return ref_ms, new_ms, tight()


def opening_order(rng: random.Random, opened: list) -> list:
    """The next round's order: each pair of kept rounds (`opened`: who opened each) opens once with each side."""
    if len(opened) % 2 == 0:
        return rng.sample(["ref", "new"], 2)
    return ["new", "ref"] if opened[-1] == "ref" else ["ref", "new"]


def medians(samples) -> tuple[float, float]:
    """Per-column medians of (ms, wall ms) samples."""
    columns = list(zip(*samples))
    return statistics.median(columns[0]), statistics.median(columns[1])


def spread_pct(samples: list) -> float:
    """1.4826 MADs (one SD for normal noise) in percent of the median."""
    middle = statistics.median(samples)
    return 100 * 1.4826 * median_abs_deviation(samples) / middle if middle > 0 else 0.0


def median_abs_deviation(values: list) -> float:
    """The median of the values' distances from their median."""
    middle = statistics.median(values)
    return statistics.median(abs(v - middle) for v in values)
