"""The worker's Timer: its clocks (CUDA events, perf_counter_ns) bound at import, before candidate code can
patch them; the windows, flushes and A B B A samples the methods (harness/common/methods/) choose and sample with."""
from __future__ import annotations

import contextlib
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import torch

from harness.common import methods
from harness.common.methods.cuda_event import SHORT_CALL_MS
from harness.common.stats import medians

_perf_counter_ns = time.perf_counter_ns
_Event = torch.cuda.Event
_synchronize = torch.cuda.synchronize
_sleep = torch.cuda._sleep

SPIN_CYCLES_PER_US = 2000  # up to 2 GHz, this many cycles last at least 1 us

CPU_FLUSH_FALLBACK_BYTES = 64 << 20
MIN_FLUSH_BYTES = 128 << 20
FLOOR_MS = 1e-6  # a sample is never <= 0
# short or long is the GPU's time to say: docs/decisions/process-offset.md
SORTING_LEAD_US = 10000.0
HALVABLE = (torch.float16, torch.bfloat16, torch.float32, torch.float64)  # halved by the graph check


def cpu_last_level_cache_bytes() -> int:
    """The largest CPU cache sysfs reports, else 64 MiB."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = entry.read_text().strip()
        scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
        sizes.append(int(text.rstrip("KM")) * scale)
    return max(sizes, default=CPU_FLUSH_FALLBACK_BYTES)


def not_prepared() -> object:
    """A Timer's function before `prepare`."""
    raise RuntimeError("Timer.prepare has not been called")


class Timer:
    """Times one function on one device: `prepare`, then `sample`."""

    def __init__(self, device: torch.device, cold_cache: bool = True, lead_us: float = 0.0):
        self.device = device
        self.lead_us = lead_us  # the spin before each window
        self.is_cuda = device.type == "cuda"
        self.cold_cache = cold_cache
        self.flush_buffer: Optional[torch.Tensor] = None
        self.place_flush_buffer()
        self.method = methods.CUDA_EVENT.name if self.is_cuda else methods.PERF_COUNTER.name  # (names travel)
        self.fn: Callable[[], object] = not_prepared
        self.batch = 1
        self.inputs: list[torch.Tensor] = []
        self.graphs: Optional[tuple[Any, Any]] = None  # (calls and flushes, flushes alone or None)
        self.capture_stream: Optional[torch.cuda.Stream] = None
        self.last_output: object = None  # the judge checks it
        self.before_call: Optional[Callable[[], None]] = None  # a stateful model's restore
        self.idle_sync_ms = idle_sync_ms(device) if self.is_cuda else 0.0
        self.snapshots: list = []  # snapshot_output's
        self.launch_late = False

    def flush_bytes(self) -> int:
        """max(2 x L2, 128 MiB) on a GPU, 2 x the CPU's last-level cache."""
        if self.is_cuda:
            l2 = torch.cuda.get_device_properties(self.device).L2_cache_size
            return max(2 * l2, MIN_FLUSH_BYTES)
        return 2 * cpu_last_level_cache_bytes()

    def place_flush_buffer(self, offset_bytes: int = 0) -> None:
        """Allocate the flush buffer anew, `offset_bytes` into its block (a captured graph must be captured again)."""
        self.flush_buffer = None  # the old one freed first
        if self.cold_cache:
            # Freed and allocated again, a block of the same size comes back at the same address: the offset moves it.
            size = self.flush_bytes()
            self.flush_buffer = torch.empty(size + offset_bytes, dtype=torch.uint8, device=self.device)[offset_bytes:]

    def flush(self) -> None:
        """Evict the caches: fill_ on a GPU, add_ on the CPU (docs/decisions/process-offset.md)."""
        if self.flush_buffer is None:
            return
        if self.is_cuda:
            self.flush_buffer.fill_(1)
        else:
            self.flush_buffer.add_(1)

    def sync(self) -> None:
        """Wait for the device, every stream included."""
        if self.is_cuda:
            _synchronize(self.device)

    def warm_up(self, fn: Callable[[], object], calls: int) -> None:
        """Run fn untimed: lazy initialisation is not measured."""
        for _ in range(calls):
            fn()
        self.sync()

    def prepare(self, fn: Callable[[], object], warmup: int, allow_graph: bool = True, batched: bool = False,
                batch: int | None = None, windows: int | None = None, inputs: Sequence = ()) -> str:
        """Warm fn up, measure it, and take the first method of methods.PREFERENCE that is chosen for it; batched,
        batch, windows: the other side's; inputs: what fn reads."""
        self.fn, self.inputs = fn, [x for x in inputs if isinstance(x, torch.Tensor) and x.dtype in HALVABLE]
        self.last_output = None  # docs/decisions/worker-output-lifetime.md
        self.warm_up(fn, warmup)
        self.batch, self.graphs = 1, None
        measured = self.measure() if self.is_cuda else methods.Measured()
        asked = methods.Asked(allow_graph, batched, batch, windows)
        for method in methods.PREFERENCE:
            if method.host_clock != self.is_cuda and method.chosen(self, measured, asked):
                self.method = method.name
                return self.method
        raise RuntimeError("no timing method was chosen")  # batched_events always is

    def measure(self) -> methods.Measured:
        """One call and one flush, each timed alone (medians of 3); a call near the short mark behind a long spin."""
        self.method = methods.CUDA_EVENT.name  # the windows below are single ones
        single, single_wall = medians(self.window(self.once) for _ in range(3))
        if self.lead_us and SHORT_CALL_MS <= single < SHORT_CALL_MS + SORTING_LEAD_US / 1000:
            # a long spin would fill the wall time
            single = min(single, medians(self.window(self.once, lead_us=SORTING_LEAD_US) for _ in range(3))[0])
        flush, flush_wall = medians(self.window(self.flush) for _ in range(3)) if self.cold_cache else (0.0, 0.0)
        return methods.Measured(single, single_wall, flush, flush_wall)

    def let_go_of_output(self) -> None:
        """Drop the last output unless a graph writes it: docs/decisions/worker-output-lifetime.md."""
        self.snapshots = []
        if not self.declared.graph:
            self.last_output = None

    def once(self) -> None:
        self.last_output = None  # first: held through the call, a multi-GB output needs room twice
        self.last_output = self.fn()

    @property
    def declared(self) -> methods.Method:
        """The chosen method (harness/common/methods/)."""
        return methods.METHODS[self.method]

    def counts_tail(self) -> bool:
        """Does a window count work left after its end? (Method.counts_tail)"""
        return self.declared.counts_tail()

    def snapshot_output(self) -> None:
        """Queue a copy of the graph's output behind a calls window's end event."""
        self.snapshots.append(cloned(self.last_output))

    def window(self, body: Callable[[], object], then: Callable[[], None] | None = None,
               lead_us: float | None = None) -> tuple[float, float]:
        """(ms, wall ms) of body behind a lead spin, idle to idle; then() after the end event (docs/judging.md)."""
        self.sync()
        if not self.is_cuda:
            began = _perf_counter_ns()
            body()
            wall = (_perf_counter_ns() - began) / 1e6
            return wall, wall
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        lead_us = self.declared.lead_us(self.lead_us) if lead_us is None else lead_us
        queued = _perf_counter_ns()
        if lead_us:
            _sleep(int(lead_us * SPIN_CYCLES_PER_US))
        wall_start = _perf_counter_ns()
        start.record()
        body()
        end.record()
        self.launch_late = bool(lead_us) and (_perf_counter_ns() - queued) / 1e3 > lead_us
        if then is not None:
            then()
        end.synchronize()
        reached_end = _perf_counter_ns()
        _synchronize(self.device)
        idle = _perf_counter_ns()
        tail_ms = max(0.0, (idle - reached_end) / 1e6 - self.idle_sync_ms) if self.counts_tail() else 0.0
        return start.elapsed_time(end) + tail_ms, (idle - wall_start) / 1e6

    def sample(self) -> tuple[float, float]:
        """One sample: (ms per call, wall ms per call), as the chosen method takes it."""
        return self.declared.sample(self)

    def abba(self, calls: Callable[[], object], flushes: Callable[[], object] | None,
             window: Callable, then: Callable[[], None] | None = None) -> tuple[float, float]:
        """A batched sample: a batch untimed (an idle GPU wakes at another clock), then windows A B B A (calls,
        flushes, flushes, calls; then() after each calls window's end): the calls' cost per call by difference."""
        (flushes or calls)()
        self.snapshots = []
        timed = [window(body, then if body is calls else None) if body else (0.0, 0.0)
                 for body in (calls, flushes, flushes, calls)]
        ms, wall = (max((a1 + a2 - b1 - b2) / (2 * self.batch), FLOOR_MS) for a1, b1, b2, a2 in zip(*timed))
        return ms, wall


def idle_sync_ms(device: torch.device) -> float:
    """An idle device-wide synchronize's cost on a GPU (median of 21)."""
    costs = []
    for _ in range(21):
        _synchronize(device)
        before = _perf_counter_ns()
        _synchronize(device)
        costs.append((_perf_counter_ns() - before) / 1e6)
    return statistics.median(costs)


def cloned(out):
    """An output's plain tensors cloned; the rest as is (a subclass's clone runs its code)."""
    if type(out) is torch.Tensor:
        return out.clone()
    if type(out) in (tuple, list):
        return type(out)(x.clone() if type(x) is torch.Tensor else x for x in out)
    return out


@contextlib.contextmanager
def threads(count: int):
    """torch's CPU threads set to `count` for a while."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def peak_memory_mb(device: torch.device) -> float:
    """Peak memory: the allocator's on a GPU, the resident set on the CPU."""
    if device.type == "cuda":
        return torch.cuda.max_memory_reserved(device) / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def out_of_memory_count(device: torch.device) -> Optional[int]:
    """Allocations here that found no GPU memory, caught ones too; None on the CPU."""
    return torch.cuda.memory_stats(device).get("num_ooms") if device.type == "cuda" else None


def now_ns() -> int:
    """The bound perf_counter_ns."""
    return _perf_counter_ns()
