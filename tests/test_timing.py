"""Timers on the CPU (the CUDA methods are in test_gpu.py)."""
import time

import torch

from harness.worker import timing


def test_cpu_timer_measures_a_sleep_with_wall_clock_beside():
    timer = timing.Timer(torch.device("cpu"), cold_cache=True)
    assert timer.flush_buffer.numel() >= 1 << 20
    assert timer.prepare(lambda: time.sleep(0.01), warmup=1) == "perf_counter"
    ms, wall = timer.sample()
    assert 9.0 <= ms < 200.0 and wall == ms


def test_the_flush_buffer_placed_anew_keeps_its_size_and_a_hot_cache_has_none():
    timer = timing.Timer(torch.device("cpu"), cold_cache=True)
    old = timer.flush_buffer
    timer.place_flush_buffer()
    assert timer.flush_buffer is not old and timer.flush_buffer.numel() == old.numel()
    hot = timing.Timer(torch.device("cpu"), cold_cache=False)
    hot.place_flush_buffer()
    assert hot.flush_buffer is None


def test_the_flush_buffer_starts_at_its_offset_into_its_block():
    """A block freed and allocated again at the same size comes back at the same address (the H200, session 61): the
    offset is what moves the buffer."""
    timer = timing.Timer(torch.device("cpu"), cold_cache=True)
    size = timer.flush_buffer.numel()
    timer.place_flush_buffer(offset_bytes=8192)
    assert timer.flush_buffer.numel() == size and timer.flush_buffer.storage_offset() == 8192


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


def test_a_call_is_sorted_short_by_its_gpu_time_behind_a_long_spin(monkeypatch):
    """A forward whose launches outlast the 100 us lead reads long in a plain window (the GPU waited on the host);
    behind SORTING_LEAD_US its GPU time shows it short, and it is batched. With launch_lead_us 0 the host's time counts,
    as configured. (A stand-in for the GPU's windows: the real ones are in test_gpu.py.)"""
    monkeypatch.setattr(timing, "_synchronize", lambda device: None)
    timer = timing.Timer(torch.device("cpu"), cold_cache=False, lead_us=100.0)
    timer.is_cuda = True
    leads = []

    def window(body, then=None, lead_us=None):
        leads.append(lead_us)
        return (0.08, 0.4) if lead_us == timing.SORTING_LEAD_US else (0.35, 0.4)

    monkeypatch.setattr(timer, "window", window)
    assert timer.prepare(lambda: None, warmup=0, allow_graph=False) == "batched_events"
    assert leads.count(timing.SORTING_LEAD_US) == 3
    timer.lead_us = 0.0
    assert timer.prepare(lambda: None, warmup=0, allow_graph=False) == "cuda_event"
    leads.clear()
    timer.lead_us = 100.0
    monkeypatch.setattr(timer, "window", lambda body, then=None, lead_us=None: leads.append(lead_us) or (50.0, 50.0))
    assert timer.prepare(lambda: None, warmup=0, allow_graph=False) == "cuda_event"
    assert timing.SORTING_LEAD_US not in leads  # 50 ms: no spin could make it short, so none is spent on it


def test_a_copy_of_an_output_keeps_its_structure():
    """Timer.snapshot_output's copy: tensors cloned (another storage, the same values), tuples and lists as such."""
    a, b = torch.rand(3), torch.rand(2)
    copied = timing.cloned((a, [b], 4))
    assert type(copied) is tuple and torch.equal(copied[0], a) and copied[0].data_ptr() != a.data_ptr()
    assert copied[1] == [b] and copied[2] == 4  # only the top level's tensors: a call returns a tensor or a tuple of them
    assert torch.equal(timing.cloned(a), a) and timing.cloned(None) is None

    class Sly(torch.Tensor):  # a subclass's clone is the candidate's code: never run behind the window
        pass

    sly = torch.rand(3).as_subclass(Sly)
    assert timing.cloned(sly) is sly and timing.cloned((sly,))[0] is sly


def test_a_timer_samples_by_what_its_method_declares():
    """The Timer reads its method's declaration: a graph's windows count no tail, others do; the CPU's has no lead."""
    timer = timing.Timer(torch.device("cpu"), cold_cache=False, lead_us=100.0)
    assert timer.method == "perf_counter" and timer.declared.host_clock and timer.counts_tail()
    timer.method = "cuda_graph"
    assert timer.declared.graph and not timer.counts_tail()
