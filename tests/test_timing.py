"""Timers on the CPU (the CUDA methods are in test_gpu.py)."""
import time

import torch

from harness import timing


def test_cpu_timer_measures_a_sleep_with_wall_clock_beside():
    timer = timing.Timer(torch.device("cpu"), cold_cache=True)
    assert timer.flush_buffer.numel() >= 1 << 20
    assert timer.prepare(lambda: time.sleep(0.01), warmup=1) == "perf_counter"
    ms, wall = timer.sample()
    assert 9.0 <= ms < 200.0 and wall == ms


def test_a_timed_call_never_holds_the_last_output_meanwhile():
    """A multi-GB output must not need room twice: the timer lets go of the last output before the next call (and
    keeps the new one for the judge's check)."""
    timer = timing.Timer(torch.device("cpu"), cold_cache=False)
    seen = []

    def call():
        seen.append(timer.last_output)
        return torch.ones(4)

    timer.prepare(call, warmup=0)
    for _ in range(3):
        timer.sample()
    assert seen == [None, None, None] and torch.equal(timer.last_output, torch.ones(4))


def test_single_windows_a_sample_add_up_to_about_the_target():
    assert timing.single_windows(20.0) == 1 and timing.single_windows(10.0) == 1
    assert timing.single_windows(2.0) == 5 and timing.single_windows(4.0) in (2, 3)
    assert timing.single_windows(0.2) == timing.MAX_SINGLE_WINDOWS
    assert timing.work_per_sample("cuda_event", 4, cold_cache=True) == (4, 4)
    assert timing.work_per_sample("cuda_event", 4, cold_cache=False) == (4, 0)


def test_a_sample_of_several_single_windows_is_their_mean_per_call(monkeypatch):
    clock = {"ns": 0}
    monkeypatch.setattr(timing, "_perf_counter_ns", lambda: clock["ns"])
    calls = []

    def call():  # takes 2 ms, then 4 ms, by the timer's clock
        calls.append(None)
        clock["ns"] += (2 if len(calls) % 2 else 4) * 1_000_000

    timer = timing.Timer(torch.device("cpu"), cold_cache=False)
    timer.prepare(call, warmup=0)
    timer.batch = 4  # as the judge's windows would set it on a GPU
    assert timer.sample() == (3.0, 3.0) and len(calls) == 4  # one call a window, their mean
