import random

import numpy as np
import torch

from harness import timing


def test_speedup_is_a_ratio_of_medians_inside_its_ci():
    rng = np.random.default_rng(1)
    ref = list(2.0 + rng.normal(0, 0.01, 50))
    new = list(1.0 + rng.normal(0, 0.01, 50))
    stats = timing.speedup_with_ci(ref, new)
    assert stats["speedup"] == np.median(ref) / np.median(new)
    assert stats["speedup_ci_low"] <= stats["speedup"] <= stats["speedup_ci_high"]
    assert 1.95 < stats["speedup_ci_low"] and stats["speedup_ci_high"] < 2.05


def test_a_a_samples_give_a_tie_whose_ci_contains_one():
    rng = np.random.default_rng(2)
    samples = list(1.0 + rng.normal(0, 0.002, 200))
    stats = timing.speedup_with_ci(samples, list(rng.permutation(samples)))
    assert stats["speedup_ci_low"] <= 1.0 <= stats["speedup_ci_high"]
    assert timing.ci_is_tight(stats, 1.0)


def test_the_ci_is_a_pure_function_of_the_samples():
    ref, new = [1.0, 1.2, 0.9, 1.1], [0.5, 0.7, 0.4, 0.6]
    assert timing.speedup_with_ci(ref, new) == timing.speedup_with_ci(ref, new)


def test_wide_ci_is_not_tight():
    stats = {"speedup": 1.0, "speedup_ci_low": 0.9, "speedup_ci_high": 1.05}
    assert not timing.ci_is_tight(stats, 1.0)


def test_cpu_timer_measures_a_sleep():
    import time

    timer = timing.Timer(torch.device("cpu"), cold_cache=True)
    assert timer.flush_buffer.numel() >= 1 << 20
    ms = timer.time_call(lambda: time.sleep(0.01))
    assert 9.0 <= ms < 200.0


ROUNDS = {"max_rounds": 60, "min_rounds": 10, "max_timing_s": 30.0, "min_timing_s": 0.0,
          "bootstrap_samples": 500, "target_ci_pct": 1.0}


def test_alternate_rounds_stops_once_the_ci_is_tight():
    ref, new, tight = timing.alternate_rounds(lambda: 2.0, lambda: 1.0, ROUNDS, random.Random(0))
    assert tight and len(ref) == len(new) == 10  # constant times: tight at the first check


def test_alternate_rounds_caps_a_noisy_pair():
    rng = np.random.default_rng(3)
    ref, new, tight = timing.alternate_rounds(lambda: float(rng.uniform(0.5, 1.5)), lambda: float(rng.uniform(0.5, 1.5)),
                                              ROUNDS, random.Random(0))
    assert not tight and len(ref) == ROUNDS["max_rounds"]


def test_alternate_rounds_randomizes_the_order_within_rounds():
    order = []
    timing.alternate_rounds(lambda: order.append("ref") or 1.0, lambda: order.append("new") or 1.0,
                            {**ROUNDS, "min_rounds": 20}, random.Random(1))
    firsts = order[0::2]
    assert "ref" in firsts and "new" in firsts
