"""Timers (CUDA events on the GPU, perf_counter_ns on the CPU) and the statistics of a timed pair.

The timer functions are bound when this module is imported, which the worker does before it imports
any candidate code, so a candidate that patches `time` or `torch.cuda.Event` later does not reach them.
"""
from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

_perf_counter_ns = time.perf_counter_ns
_Event = torch.cuda.Event
_synchronize = torch.cuda.synchronize

CPU_FLUSH_FALLBACK_BYTES = 64 << 20
MIN_FLUSH_BYTES = 128 << 20


def cpu_last_level_cache_bytes() -> int:
    """The largest CPU cache size sysfs reports, or a 64 MiB guess."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = entry.read_text().strip()
        scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
        sizes.append(int(text.rstrip("KM")) * scale)
    return max(sizes, default=CPU_FLUSH_FALLBACK_BYTES)


class Timer:
    """Times one call at a time on one device, each with a cold cache and a device-wide sync at the end."""

    def __init__(self, device: torch.device, cold_cache: bool = True):
        self.device = device
        self.is_cuda = device.type == "cuda"
        self.cold_cache = cold_cache
        self.flush_buffer = torch.empty(self.flush_bytes(), dtype=torch.uint8, device=device) if cold_cache else None
        self.name = "cuda_event" if self.is_cuda else "perf_counter"

    def flush_bytes(self) -> int:
        """Twice the last-level cache, at least 128 MiB on a GPU."""
        if self.is_cuda:
            l2 = torch.cuda.get_device_properties(self.device).L2_cache_size
            return max(2 * l2, MIN_FLUSH_BYTES)
        return 2 * cpu_last_level_cache_bytes()

    def flush(self) -> None:
        """Evict the caches by writing the flush buffer (outside any timed window)."""
        if self.flush_buffer is not None:
            self.flush_buffer.add_(1)

    def sync(self) -> None:
        """Wait for all work on the device, every stream included."""
        if self.is_cuda:
            _synchronize(self.device)

    def time_call(self, fn: Callable[[], object]) -> float:
        """Milliseconds of one call of fn, the window closed by a device-wide synchronize."""
        self.flush()
        self.sync()
        if not self.is_cuda:
            start = _perf_counter_ns()
            fn()
            return (_perf_counter_ns() - start) / 1e6
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        start.record()
        fn()
        _synchronize(self.device)  # side-stream work launched by fn counts
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def warm_up(self, fn: Callable[[], object], calls: int) -> None:
        """Run fn a few times, untimed, so that lazy initialisation is not measured."""
        for _ in range(calls):
            fn()
        self.sync()


def peak_memory_mb(device: torch.device) -> float:
    """Peak memory of this process: the caching allocator's on a GPU, the resident set on the CPU."""
    if device.type == "cuda":
        return torch.cuda.max_memory_reserved(device) / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def now_ns() -> int:
    """The bound perf_counter_ns."""
    return _perf_counter_ns()


def speedup_with_ci(ref_ms: list, new_ms: list, resamples: int = 2000, seed: int = 0) -> dict:
    """Median per side, speedup = median(ref)/median(new), and a paired bootstrap 95% CI over rounds."""
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


def alternate_rounds(ref_call: Callable[[], float], new_call: Callable[[], float], cfg: dict,
                     rng: random.Random) -> tuple[list, list, bool]:
    """Rounds of one timed call per side in random order, until the speedup's CI is tight or a cap is hit.

    Returns both sides' samples (ms) and whether the CI reached the target.
    """
    ref_ms, new_ms = [], []
    calls = {"ref": (ref_call, ref_ms), "new": (new_call, new_ms)}
    while len(ref_ms) < cfg["max_rounds"] and min(sum(ref_ms), sum(new_ms)) < cfg["max_timing_s"] * 1e3:
        for side in rng.sample(["ref", "new"], 2):
            call, samples = calls[side]
            samples.append(call())
        enough = len(ref_ms) >= cfg["min_rounds"] and min(sum(ref_ms), sum(new_ms)) >= cfg["min_timing_s"] * 1e3
        if enough and len(ref_ms) % 5 == 0 and ci_is_tight(speedup_with_ci(ref_ms, new_ms, cfg["bootstrap_samples"]),
                                                           cfg["target_ci_pct"]):
            break
    stats = speedup_with_ci(ref_ms, new_ms, cfg["bootstrap_samples"])
    return ref_ms, new_ms, ci_is_tight(stats, cfg["target_ci_pct"])


def ci_is_tight(stats: dict, target_pct: float) -> bool:
    """True when the speedup's CI lies within +-target_pct percent of the speedup."""
    s = stats["speedup"]
    return stats["speedup_ci_high"] <= s * (1 + target_pct / 100) and stats["speedup_ci_low"] >= s * (1 - target_pct / 100)
