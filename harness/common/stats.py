"""Statistics of a timed pair, the one home of statistics over raw samples: medians and robust spreads, the paired
speedup, its CI and the harness's resolution, the stopping rule and the tie rule."""
from __future__ import annotations

import math
import random
import statistics
import time
from typing import Callable

import numpy as np

from harness.common.config import Config

TIE_BAND = (0.98, 1.02)
# the fewest pairs of rounds whose range holds their median (1 - 2 / 2^5 = 94% of the time): min_rounds' 10
MIN_PAIRS = 5


def speedup_with_ci(ref_ms: list, new_ms: list) -> dict:
    """Medians per side, and the speedup from paired rounds: exp(median of each pair of rounds' mean log(ref/new)),
    with the 95% CI of that median from a sign test whose variance allows for units that are not independent.

    A round's two samples are taken back to back, so drift that hits both sides of a round cancels from its
    ratio, and a burst that hits one sample moves the median little. Rounds come in pairs, each opened once by each
    side (alternate_rounds): where the side that goes second runs slower (a microsecond call on the H200, 10%), a
    round's ratio is one of two values, and the median of both kinds lands anywhere between them; a pair's mean
    cancels it. The CI is a pair of order statistics of the pairs' ratios, distribution-free: for independent
    units, ranks n/2 -+ 1.96 sqrt(n)/2. Units are not independent (clocks, the host's load and the memory's state
    change over seconds, not per round): how many fall above the median varies more when one above tends to follow
    one above, by (1 + r) / (1 - r) for a lag-1 correlation r of those signs, and the ranks move out by its square
    root. (A bootstrap over single rounds, the earlier CI, held the true speedup of A/A pairs far less often:
    tests/test_stats.py.) An odd last round, the pair's first half, is left out of the speedup.
    """
    ref, new = np.asarray(ref_ms, dtype=float), np.asarray(new_ms, dtype=float)
    rounds = np.log(ref) - np.log(new)
    pairs = paired_means(rounds)
    middle = float(np.median(pairs))
    # Over fewer pairs the sign test's widest interval, their range, holds the median too seldom (two pairs: half the
    # time): the single rounds' range then, which both kinds of round widen (a pair cut short by max_timing_s).
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
    """The 95% interval of the values' median, a pair of their order statistics (the sign test, widened for a lag-1
    correlation of which side of the median consecutive values fall)."""
    n = len(values)
    above = (values > middle).astype(float)
    r = min(max(lag1_correlation(above), 0.0), 0.9)
    half = 1.96 * math.sqrt(n * (1 + r) / (1 - r)) / 2
    ordered = np.sort(values)
    return ordered[max(0, math.floor(n / 2 - half - 0.5))], ordered[min(n - 1, math.ceil(n / 2 + half - 0.5))]


def paired_means(ratios: np.ndarray) -> np.ndarray:
    """The mean of each pair of consecutive rounds' log ratios (a single round stands alone)."""
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
    """The CI widened by the harness's resolution on each side: two worker processes timing the same kernel
    differ by a few tenths of a percent for a whole pair (memory placement, the process's own state), which no
    interval drawn from one pair's rounds can show (A/A pairs on the H100: configs/default.yaml)."""
    low, high = 1 - resolution_pct / 100, 1 + resolution_pct / 100
    return {**stats, "speedup_ci_low": stats["speedup_ci_low"] * low,
            "speedup_ci_high": stats["speedup_ci_high"] * high}


def ci_is_tight(stats: dict, target_pct: float) -> bool:
    """True when the speedup's CI lies within +-target_pct percent of the speedup."""
    s = stats["speedup"]
    return (stats["speedup_ci_high"] <= s * (1 + target_pct / 100)
            and stats["speedup_ci_low"] >= s * (1 - target_pct / 100))


def is_tie(stats: dict) -> bool:
    """A speedup inside [0.98, 1.02] whose CI contains 1 is reported as a tie, not a win or a loss."""
    return (TIE_BAND[0] <= stats["speedup"] <= TIE_BAND[1]
            and stats["speedup_ci_low"] <= 1.0 <= stats["speedup_ci_high"])


def alternate_rounds(ref_call: Callable[[], float], new_call: Callable[[], float], cfg: Config,
                     rng: random.Random, before_round: Callable[[int], None] = lambda i: None,
                     clock: Callable[[], float] = time.monotonic,
                     round_kept: Callable[[], bool] = lambda: True,
                     undecided: Callable[[list, list], bool] | None = None) -> tuple[list, list, bool]:
    """Rounds of one sample per side in counterbalanced random order, until the speedup's CI is tight or a cap is hit.

    `before_round(i)` runs before round i (new input contents, checks of the previous round's output); `round_kept()`
    after each: a round it rejects (another process used the GPU) is dropped. Stops after at least min_rounds rounds
    and min_timing_s seconds of `clock`, once the CI is within +-target_ci_pct; gives up at max_rounds or after
    max_timing_s seconds of `clock`, the judge's own (a cap on the workers' reported samples would let a forged clock
    keep the rounds going for ever).
    Then, while `undecided(ref_ms, new_ms)` (a gate's bar inside the CI), more rounds: up to gate_timing_s more
    seconds and max_rounds more rounds, until it is decided.
    Returns both sides' samples (ms) and whether the CI reached the target (never from fewer than min_rounds rounds).
    """
    ref_ms, new_ms = list[float](), list[float]()
    calls = {"ref": (ref_call, ref_ms), "new": (new_call, new_ms)}
    attempts = [0]  # rounds run, dropped ones included: the judge's deadline holds even when every round is dropped
    order, opened = list[str](), list[str]()  # this round's order; the side that opened each kept round

    def tight() -> bool:
        return len(ref_ms) >= cfg.min_rounds and ci_is_tight(speedup_with_ci(ref_ms, new_ms), cfg.target_ci_pct)

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
    deadline = started + cfg.max_timing_s
    while len(ref_ms) < cfg.max_rounds and attempts[0] < 2 * cfg.max_rounds and (not attempts[0] or clock() < deadline):
        one_round()
        enough = len(ref_ms) >= cfg.min_rounds and clock() - started >= cfg.min_timing_s
        if enough and len(ref_ms) % 5 == 0 and tight():
            break
    if undecided is not None and cfg.gate_timing_s and len(ref_ms) >= 2 and undecided(ref_ms, new_ms):
        deadline, limit = clock() + cfg.gate_timing_s, len(ref_ms) + cfg.max_rounds
        while len(ref_ms) < limit and attempts[0] < 4 * cfg.max_rounds and clock() < deadline:
            one_round()
            if len(ref_ms) % 5 == 0 and not undecided(ref_ms, new_ms):
                break
    return ref_ms, new_ms, tight()


def opening_order(rng: random.Random, opened: list) -> list:
    """The sides' order in the next round, counterbalanced: each pair of kept rounds (`opened`: who opened each) opens
    once with each side, the first of the pair drawn at random, so that an advantage of opening (or closing) a round
    cancels within the pair (speedup_with_ci) instead of following the draws (docs/decisions/process-offset.md)."""
    if len(opened) % 2 == 0:
        return rng.sample(["ref", "new"], 2)
    return ["new", "ref"] if opened[-1] == "ref" else ["ref", "new"]


def medians(samples) -> tuple[float, float]:
    """Per-column medians of (ms, wall ms) samples."""
    columns = list(zip(*samples))
    return statistics.median(columns[0]), statistics.median(columns[1])


def spread_pct(samples: list) -> float:
    """The samples' robust spread, in percent of their median: 1.4826 MADs (one SD for normal noise)."""
    middle = statistics.median(samples)
    return 100 * 1.4826 * median_abs_deviation(samples) / middle if middle > 0 else 0.0


def median_abs_deviation(values: list) -> float:
    """The median of the values' distances from their median (a spread that outliers do not move)."""
    middle = statistics.median(values)
    return statistics.median(abs(v - middle) for v in values)
