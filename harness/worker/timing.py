"""Timers (CUDA events and graphs, perf_counter_ns), bound at import: before candidate code can patch them."""
from __future__ import annotations

import contextlib
import ctypes
import math
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import torch

from harness.common import methods
from harness.common.stats import medians

_perf_counter_ns = time.perf_counter_ns
_Event = torch.cuda.Event
_synchronize = torch.cuda.synchronize
_CUDAGraph = torch.cuda.CUDAGraph
_graph = torch.cuda.graph
_sleep = torch.cuda._sleep

SPIN_CYCLES_PER_US = 2000  # up to 2 GHz, this many cycles last at least 1 us

CPU_FLUSH_FALLBACK_BYTES = 64 << 20
MIN_FLUSH_BYTES = 128 << 20
SHORT_CALL_MS = 0.2  # batched below: a launch must not be the result
BATCH_TARGET_MS = 2.0
WALL_BATCH_LIMIT_MS = 10 * BATCH_TARGET_MS  # by the host's clock
MAX_BATCH = 4096
FLOOR_MS = 1e-6  # a sample is never <= 0
SAMPLE_TARGET_MS = 10.0  # docs/decisions/worker-sample-windows.md
LATE_LAUNCH_RETRIES = 3
# short or long is the GPU's time to say: docs/decisions/process-offset.md
SORTING_LEAD_US = 10000.0
MAX_SINGLE_WINDOWS = 16
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

    def place_flush_buffer(self) -> None:
        """Allocate the flush buffer anew (a captured graph must be captured again)."""
        self.flush_buffer = None  # the old one freed first
        if self.cold_cache:
            self.flush_buffer = torch.empty(self.flush_bytes(), dtype=torch.uint8, device=self.device)

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
        """Warm fn up, pick its method; batched, batch, windows: the other side's; inputs: what fn reads."""
        self.fn, self.inputs = fn, [x for x in inputs if isinstance(x, torch.Tensor) and x.dtype in HALVABLE]
        self.last_output = None  # docs/decisions/worker-output-lifetime.md
        self.warm_up(fn, warmup)
        if not self.is_cuda:
            return self.method
        self.method, self.batch, self.graphs = methods.CUDA_EVENT.name, 1, None
        single, single_wall = medians(self.window(self.once) for _ in range(3))
        if self.lead_us and SHORT_CALL_MS <= single < SHORT_CALL_MS + SORTING_LEAD_US / 1000:
            # a long spin would fill the wall time
            single = min(single, medians(self.window(self.once, lead_us=SORTING_LEAD_US) for _ in range(3))[0])
        flush, flush_wall = medians(self.window(self.flush) for _ in range(3)) if self.cold_cache else (0.0, 0.0)
        if (single >= SHORT_CALL_MS or self.before_call) and not batched and batch is None:  # restored outside a window
            self.batch = windows if windows is not None else single_windows(single)
            return self.method
        by_events = math.ceil(BATCH_TARGET_MS / max(single + flush, 1e-3))
        by_wall = math.ceil(WALL_BATCH_LIMIT_MS / max(single_wall + flush_wall, 1e-3))  # a forged event clock reads ~0
        self.batch = min(MAX_BATCH, max(2, batch if batch is not None else min(by_events, by_wall)))
        self.graphs, self.method = None, methods.BATCHED_EVENTS.name
        if not allow_graph:
            return self.method
        try:
            self.graphs = (self.capture(with_call=True), self.capture(with_call=False) if self.cold_cache else None)
            if not self.replay_reproduces_call():
                raise RuntimeError("the graph's replay does not reproduce the call")
            self.method = methods.CUDA_GRAPH.name
        except Exception:  # a call that syncs, say, cannot be captured
            self.sync()
            self.graphs, self.method = None, methods.BATCHED_EVENTS.name
        return self.method

    def replay_reproduces_call(self) -> bool:
        """Does a replay match a call, on halved inputs too? docs/decisions/worker-graph-capture.md"""
        if not self.replay_matches_call():
            return False
        halved = []
        try:
            with torch.no_grad():
                for x in self.inputs:
                    x.mul_(0.5)
                    halved.append(x)
            return not halved or self.replay_matches_call()
        finally:
            with torch.no_grad():
                for x in halved:
                    x.mul_(2.0)

    def replay_matches_call(self) -> bool:
        """One call, then a replay over its output's copy: the same values?"""
        expected = [t.clone() for t in output_tensors(self.fn())]
        self.sync()
        replayed = output_tensors(self.last_output)
        if not expected or len(expected) != len(replayed):
            return False
        for t, e in zip(replayed, expected):  # contents the replay must overwrite to pass
            t.copy_(e.logical_not() if e.dtype == torch.bool else
                    e + 1 if not (e.is_floating_point() or e.is_complex()) else torch.full_like(e, float("nan")))
        assert self.graphs is not None
        self.graphs[0].replay()
        self.sync()
        return all(a.shape == b.shape and same_values(a, b) for a, b in zip(expected, replayed))

    def capture(self, with_call: bool):
        """A graph of `batch` x (flush, call), or of the flushes, on a blocking stream."""
        graph = _CUDAGraph()
        if self.capture_stream is None:
            self.capture_stream = blocking_stream(self.device)
        side = self.capture_stream
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):  # torch's advice: once on the side stream first
            self.once() if with_call else self.flush()
        torch.cuda.current_stream(self.device).wait_stream(side)
        generator = torch.cuda.default_generators[self.device.index if self.device.index is not None
                                                  else torch.cuda.current_device()]
        outside = generator.graphsafe_get_state()
        generator.graphsafe_set_state(generator.clone_state())  # a failed capture breaks the state it holds
        try:
            with _graph(graph, stream=side):
                for _ in range(self.batch):
                    self.flush()
                    if with_call:
                        self.last_output = self.fn()  # rewritten by each replay
        finally:
            generator.graphsafe_set_state(outside)
        self.sync()
        return graph

    def recapture(self) -> None:
        """Capture the graphs again (Worker.op_replace)."""
        self.graphs = (self.capture(with_call=True), self.capture(with_call=False) if self.cold_cache else None)

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
        """What the chosen method declares (common/methods.py)."""
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
        """One sample: (ms per call, wall ms per call)."""
        if not self.declared.batched:
            timed = []
            for _ in range(self.batch):
                self.flush()
                if self.before_call:
                    self.before_call()
                timed.append(self.window(self.once))
            return tuple(sum(column) / self.batch for column in zip(*timed))
        if self.declared.graph:
            assert self.graphs is not None
            graph_calls, graph_flushes = self.graphs
            calls, flushes = graph_calls.replay, graph_flushes.replay if graph_flushes else None
        else:
            calls, flushes = self.batched_calls, self.batched_flushes if self.cold_cache else None
        (flushes or calls)()  # an idle GPU wakes at another clock: a batch untimed, then A B B A
        self.snapshots = []
        window, then = (self.graph_window, self.snapshot_output) if self.declared.graph else (self.window, None)
        timed = [window(body, then if body is calls else None) if body else (0.0, 0.0)
                 for body in (calls, flushes, flushes, calls)]
        return tuple(max((a1 + a2 - b1 - b2) / (2 * self.batch), FLOOR_MS) for a1, b1, b2, a2 in zip(*timed))

    def graph_window(self, body: Callable[[], object], then: Callable[[], None] | None) -> tuple[float, float]:
        """A graph's window, timed again while its launch is late (LATE_LAUNCH_RETRIES)."""
        for attempt in range(LATE_LAUNCH_RETRIES + 1):
            if attempt and then is not None:
                self.snapshots.pop()  # the late window's copy
            timed = self.window(body, then)
            if not self.launch_late:
                break
        return timed

    def batched_calls(self) -> None:
        self.last_output = None
        for _ in range(self.batch):
            self.flush()
            if self.before_call:  # in the window: both sides restore alike
                self.before_call()
            self.last_output = self.fn()

    def batched_flushes(self) -> None:
        for _ in range(self.batch):
            self.flush()


def idle_sync_ms(device: torch.device) -> float:
    """An idle device-wide synchronize's cost on a GPU (median of 21)."""
    costs = []
    for _ in range(21):
        _synchronize(device)
        before = _perf_counter_ns()
        _synchronize(device)
        costs.append((_perf_counter_ns() - before) / 1e6)
    return statistics.median(costs)


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to float rounding, or exactly (integers, bools)."""
    if a.is_floating_point() or a.is_complex():
        return torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
    return torch.equal(a, b)


def blocking_stream(device: torch.device) -> torch.cuda.Stream:
    """A new blocking stream, else a pool one: docs/decisions/worker-graph-capture.md."""
    handle = ctypes.c_void_p()
    try:
        cudart = torch.cuda.cudart()
        with torch.cuda.device(device):
            made = cudart.cudaStreamCreate(ctypes.addressof(handle)) == cudart.cudaError.success
    except Exception:
        made = False
    if made and handle.value:
        return torch.cuda.ExternalStream(handle.value, device=device)
    return torch.cuda.Stream(device)


def cloned(out):
    """An output's plain tensors cloned; the rest as is (a subclass's clone runs its code)."""
    if type(out) is torch.Tensor:
        return out.clone()
    if type(out) in (tuple, list):
        return type(out)(x.clone() if type(x) is torch.Tensor else x for x in out)
    return out


def output_tensors(out) -> list:
    """The tensors of an output (a tensor, or a tuple or list of them)."""
    items = out if isinstance(out, (tuple, list)) else [out]
    return [t for t in items if isinstance(t, torch.Tensor)]


def single_windows(call_ms: float) -> int:
    """Single windows a sample takes of a call this long (SAMPLE_TARGET_MS)."""
    return max(1, min(MAX_SINGLE_WINDOWS, round(SAMPLE_TARGET_MS / call_ms)))


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
