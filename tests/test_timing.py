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


def test_finite_or_none():
    assert timing.finite_or_none(float("nan")) is None and timing.finite_or_none(1.5) == 1.5
