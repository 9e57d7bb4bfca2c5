"""Timers: CUDA events (one call, or a CUDA-graph replay of many) on the GPU, perf_counter_ns on the CPU.

The timer functions are bound when this module is imported, which the worker does before it imports
any candidate code, so a candidate that patches `time` or `torch.cuda.Event` later does not reach them.
Every window ends with a device-wide synchronize, so work a call leaves on other streams is counted
(by the host's clock, beyond the current stream's end event), and a host wall-clock reading is taken
around the same window.
"""
from __future__ import annotations

import contextlib
import ctypes
import math
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import torch

from harness.common.stats import medians

_perf_counter_ns = time.perf_counter_ns
_Event = torch.cuda.Event
_synchronize = torch.cuda.synchronize
_CUDAGraph = torch.cuda.CUDAGraph
_graph = torch.cuda.graph
_sleep = torch.cuda._sleep

SPIN_CYCLES_PER_US = 2000  # a spin of this many GPU cycles per microsecond lasts at least that long up to 2 GHz

CPU_FLUSH_FALLBACK_BYTES = 64 << 20
MIN_FLUSH_BYTES = 128 << 20
SHORT_CALL_MS = 0.2  # calls shorter than this are timed in batches: launch overhead must not be the result
BATCH_TARGET_MS = 2.0  # one batched window lasts about this long
WALL_BATCH_LIMIT_MS = 10 * BATCH_TARGET_MS  # ... and by the host's clock (launches, syncs) at most this long
MAX_BATCH = 4096
FLOOR_MS = 1e-6  # a batched difference is clamped here: a sample is never zero or negative
# A GPU call of SHORT_CALL_MS or more is timed alone in its window, and a sample times about this many milliseconds
# of such windows (at most MAX_SINGLE_WINDOWS), their mean its value: a round costs ~30 ms beyond its windows (GPU
# probes, fresh inputs, requests) however short they are. On the H100 (kernelbench-aa-h100-levels123-9a9587a.md) this
# halved the rounds of 1-10 ms pairs and took 4_LeNet5's round-to-round spread from 22% to 0.6%; launch-bound networks
# stayed as noisy (their host's speed changes from request to request, not from window to window).
SAMPLE_TARGET_MS = 10.0
# A graph's window is led by a spin of at least GRAPH_LEAD_US, which its launch must fit behind: in the harness's
# workers on the H200 a replay's launch took 120 us (median; p99 270 us), and with the 100 us lead 65% of windows then
# counted the GPU waiting on the host, which spread a 2 us call's samples by ~20%. A window whose launch outlasted its
# lead anyway is timed again, at most LATE_LAUNCH_RETRIES times (docs/decisions/process-offset.md, session 56).
GRAPH_LEAD_US = 1000.0
LATE_LAUNCH_RETRIES = 3
# Whether a call is short (SHORT_CALL_MS) is its GPU time's to say, measured behind a spin this long, which a forward of
# many small launches fits behind: behind launch_lead_us's 100 us, the workers' host time to launch KernelBench v0's
# level2 forwards (~0.1 ms on the GPU) sorted them as long in one sweep and short in another (session 57), and timed
# alone they spread by 35-70% a sample where their graphs spread by 3-8%.
SORTING_LEAD_US = 10000.0
MAX_SINGLE_WINDOWS = 16
METHODS = ("perf_counter", "cuda_event", "cuda_graph", "batched_events")
SINGLE_METHODS = ("perf_counter", "cuda_event")  # one call a window (`batch` windows a sample)
BATCHED_METHODS = ("cuda_graph", "batched_events")  # `batch` calls a window
HALVABLE = (torch.float16, torch.bfloat16, torch.float32, torch.float64)  # inputs the graph check changes (x 0.5)


def cpu_last_level_cache_bytes() -> int:
    """The largest CPU cache size sysfs reports, or a 64 MiB guess."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = entry.read_text().strip()
        scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
        sizes.append(int(text.rstrip("KM")) * scale)
    return max(sizes, default=CPU_FLUSH_FALLBACK_BYTES)


def not_prepared() -> object:
    """A Timer's function before `prepare` gives it one."""
    raise RuntimeError("Timer.prepare has not been called")


class Timer:
    """Times one function on one device; `prepare` picks the method, `sample` returns (ms, wall_ms) per call.

    Methods: `perf_counter` (CPU), `cuda_event` (one call per window), `cuda_graph` (a graph of k calls,
    each after a cache flush, minus a graph of the k flushes alone), `batched_events` (the same with plain
    launches, when the call cannot be captured in a graph).
    """

    def __init__(self, device: torch.device, cold_cache: bool = True, lead_us: float = 0.0):
        self.device = device
        self.lead_us = lead_us  # GPU spin queued before each window's start event (window_lead_us, window)
        self.is_cuda = device.type == "cuda"
        self.cold_cache = cold_cache
        self.flush_buffer: Optional[torch.Tensor] = None
        self.place_flush_buffer()
        self.method = "cuda_event" if self.is_cuda else "perf_counter"
        self.fn: Callable[[], object] = not_prepared
        self.batch = 1
        self.inputs: list[torch.Tensor] = []
        self.graphs: Optional[tuple[Any, Any]] = None  # (calls and flushes, flushes alone or None)
        self.capture_stream: Optional[torch.cuda.Stream] = None
        self.last_output: object = None  # what the last timed call returned (the judge checks it)
        # a stateful model's restore before each timed call (outside single windows)
        self.before_call: Optional[Callable[[], None]] = None
        self.idle_sync_ms = self.measure_idle_sync_ms()
        self.snapshots: list = []  # a graph's output as each calls window of the last sample ended (snapshot_output)
        self.launch_late = False  # did the last window's launch outlast its lead spin (window)?

    def flush_bytes(self) -> int:
        """max(2 x L2, 128 MiB) on a GPU; twice the last-level cache on the CPU."""
        if self.is_cuda:
            l2 = torch.cuda.get_device_properties(self.device).L2_cache_size
            return max(2 * l2, MIN_FLUSH_BYTES)
        return 2 * cpu_last_level_cache_bytes()

    def place_flush_buffer(self) -> None:
        """Allocate the flush buffer (anew, in Worker.op_replace: where the timed work's memory lies moved a 2 us
        call by 14-17% on the H200, docs/decisions/process-offset.md; a captured graph must be captured again to
        follow it)."""
        self.flush_buffer = None  # (the old one freed first)
        if self.cold_cache:
            self.flush_buffer = torch.empty(self.flush_bytes(), dtype=torch.uint8, device=self.device)

    def flush(self) -> None:
        """Evict the caches by writing the flush buffer. On a GPU a plain fill: a graph-timed sample subtracts a window
        of flushes from one of flushes and calls, so whatever varies in a flush is amplified in a microsecond call, and
        add_'s read and write (twice the traffic) set 2 us A/A blocks 2.55% apart (RMS) on the H200, the fill 0.6-1.2%
        (docs/decisions/process-offset.md, session 57). On the CPU a read and write: a large memset may bypass the
        caches with non-temporal stores."""
        if self.flush_buffer is None:
            return
        if self.is_cuda:
            self.flush_buffer.fill_(1)
        else:
            self.flush_buffer.add_(1)

    def sync(self) -> None:
        """Wait for all work on the device, every stream included."""
        if self.is_cuda:
            _synchronize(self.device)

    def warm_up(self, fn: Callable[[], object], calls: int) -> None:
        """Run fn a few times, untimed, so that lazy initialisation is not measured."""
        for _ in range(calls):
            fn()
        self.sync()

    def prepare(self, fn: Callable[[], object], warmup: int, allow_graph: bool = True, batched: bool = False,
                batch: int | None = None, windows: int | None = None, inputs: Sequence = ()) -> str:
        """Warm fn up and choose how to time it: short GPU calls are batched (graph, else plain launches), and any
        call when `batched` (the other side's call is short) or `batch` (this many calls a window) is given; a
        longer one in single windows, `windows` of them a sample if given (the other side's), else as many as
        SAMPLE_TARGET_MS asks. `inputs`: the tensors fn reads, which the graph check changes and restores."""
        self.fn, self.inputs = fn, [x for x in inputs if isinstance(x, torch.Tensor) and x.dtype in HALVABLE]
        self.last_output = None  # an earlier prepare's: held through the warm-up, a multi-GB output needs room twice
        self.warm_up(fn, warmup)
        if not self.is_cuda:
            return self.method
        self.method, self.batch, self.graphs = "cuda_event", 1, None  # a second prepare starts afresh
        single, single_wall = medians(self.window(self.once) for _ in range(3))
        if self.lead_us and SHORT_CALL_MS <= single < SHORT_CALL_MS + SORTING_LEAD_US / 1000:
            # (only where it can change the sort; the wall time stays the plain windows': a long spin would fill it)
            single = min(single, medians(self.window(self.once, lead_us=SORTING_LEAD_US) for _ in range(3))[0])
        flush, flush_wall = medians(self.window(self.flush) for _ in range(3)) if self.cold_cache else (0.0, 0.0)
        # A stateful model's calls each start from its restored state, outside the window: one call a window.
        if (single >= SHORT_CALL_MS or self.before_call) and not batched and batch is None:
            self.batch = windows if windows is not None else single_windows(single)
            return self.method
        # Sized by the events, but never past what the host's clock allows: events that read ~0 (a forged
        # clock) would otherwise ask for thousands of calls per window, each window taking seconds.
        by_events = math.ceil(BATCH_TARGET_MS / max(single + flush, 1e-3))
        by_wall = math.ceil(WALL_BATCH_LIMIT_MS / max(single_wall + flush_wall, 1e-3))
        self.batch = min(MAX_BATCH, max(2, batch if batch is not None else min(by_events, by_wall)))
        self.graphs, self.method = None, "batched_events"
        if not allow_graph:
            return self.method
        try:
            self.graphs = (self.capture(with_call=True), self.capture(with_call=False) if self.cold_cache else None)
            if not self.replay_reproduces_call():
                raise RuntimeError("the graph's replay does not reproduce the call")
            self.method = "cuda_graph"
        except Exception:  # a call that syncs, or uses an uncaptured stream, cannot be captured
            self.sync()
            self.graphs, self.method = None, "batched_events"
        return self.method

    def replay_reproduces_call(self) -> bool:
        """Does a replay write what a plain call returns, on the inputs of the capture and on others? Work that runs
        outside the capture (a kernel launched on a stream the capture does not follow: the per-thread default stream,
        say, or the legacy one where the capture stream is not blocking) is left out of every replay: the replays
        would time (and return) nothing, or, where captured work reads what it wrote, the capture's stale result,
        which only other inputs show (kbl-l3-p2-o1, an MLP in the real generations, was `wrong_timed_output` for it)."""
        if not self.replay_matches_call():
            return False
        # Halved, the inputs keep their signs, ranges and structure (probabilities stay probabilities, a symmetric
        # matrix symmetric). Doubled back, they are the same bits but for the last bit of values near the smallest
        # normal one, and the rounds refill them anyway.
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
        """One plain call, then one replay writing over its output's copy: the same values?"""
        expected = [t.clone() for t in output_tensors(self.fn())]
        self.sync()
        replayed = output_tensors(self.last_output)
        if not expected or len(expected) != len(replayed):
            return False
        for t, e in zip(replayed, expected):  # contents the replay must overwrite to pass
            t.copy_(e.logical_not() if e.dtype == torch.bool else
                    e + 1 if not (e.is_floating_point() or e.is_complex()) else torch.full_like(e, float("nan")))
        assert self.graphs is not None  # (captured by prepare, which asks this)
        self.graphs[0].replay()
        self.sync()
        return all(a.shape == b.shape and same_values(a, b) for a, b in zip(expected, replayed))

    def capture(self, with_call: bool):
        """A CUDA graph of `batch` x (flush, call), or of the flushes alone, captured on a blocking stream."""
        graph = _CUDAGraph()
        if self.capture_stream is None:
            self.capture_stream = blocking_stream(self.device)
        side = self.capture_stream
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):  # torch's advice: run once on a side stream before capturing
            self.once() if with_call else self.flush()
        torch.cuda.current_stream(self.device).wait_stream(side)
        # A capture registers the default generator's state and, if it fails, leaves that state mid-capture:
        # every later random draw in this process would then raise. So the capture gets a copy of the state.
        generator = torch.cuda.default_generators[self.device.index if self.device.index is not None
                                                  else torch.cuda.current_device()]
        outside = generator.graphsafe_get_state()
        generator.graphsafe_set_state(generator.clone_state())
        try:
            with _graph(graph, stream=side):
                for _ in range(self.batch):
                    self.flush()
                    if with_call:
                        self.last_output = self.fn()  # the graph's last call rewrites this tensor on each replay
        finally:
            generator.graphsafe_set_state(outside)
        self.sync()
        return graph

    def recapture(self) -> None:
        """The graphs captured again, as prepare captured them (a confirmation block's re-placement:
        harness.runner.blocks)."""
        self.graphs = (self.capture(with_call=True), self.capture(with_call=False) if self.cold_cache else None)

    def let_go_of_output(self) -> None:
        """Drop the last timed call's output to make room, unless a graph's replays write it: no later round sets that
        one again, and every timed-output check after a trace read None (an A/A pair `incorrect` on the H100)."""
        self.snapshots = []
        if self.method != "cuda_graph":
            self.last_output = None

    def once(self) -> None:
        # The last output is let go first: held through the call, a multi-GB output needs room twice (on the H100
        # three processes' copies of KernelBench's 6-8 GB Swish and L1Norm tensors did not fit).
        self.last_output = None
        self.last_output = self.fn()

    def counts_tail(self) -> bool:
        """Does a window count the work left on the device after its end event? Not a graph's: a replay is done at its
        end event, so only another thread's work can be left, and what the judge checks of a graph's output is its
        copy taken right behind that event (snapshot_output), which such work comes too late to write. Counted, the
        host's jitter in synchronizing set a 2 us call's spread sample to sample (docs/decisions/process-offset.md)."""
        return self.method != "cuda_graph"

    def snapshot_output(self) -> None:
        """Queue a copy of the graph's output right behind a calls window's end event (the judge checks this copy)."""
        self.snapshots.append(cloned(self.last_output))

    def window(self, body: Callable[[], object], then: Callable[[], None] | None = None,
               lead_us: float | None = None) -> tuple[float, float]:
        """(ms, wall ms) of body, from an idle device until the device is idle again.

        The end event, recorded right behind body on the current stream, times body's work there free of
        the host's wake-up latency. Work body left on other streams (or that its threads queued) is
        counted too: the host waits for the end event, then for the whole device, and whatever that
        second wait took beyond a synchronize of an idle device is added to the sample.
        A spin on the GPU goes first (`lead_us` where given, else window_lead_us: the timer's lead, at least
        GRAPH_LEAD_US before a graph): the start event
        then waits for it while the host launches body, so the host's latency in launching body's first work (a graph
        of many nodes, a Python forward) is not counted (left out, it was, and it moves with the host's speed).
        `launch_late` says whether the host took longer than the spin to launch body (graph_window times it again).
        """
        self.sync()
        if not self.is_cuda:
            began = _perf_counter_ns()
            body()
            wall = (_perf_counter_ns() - began) / 1e6
            return wall, wall
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        lead_us = window_lead_us(self.method, self.lead_us) if lead_us is None else lead_us
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

    def measure_idle_sync_ms(self) -> float:
        """What a device-wide synchronize costs the host when nothing is running (median of 21)."""
        if not self.is_cuda:
            return 0.0
        costs = []
        for _ in range(21):
            _synchronize(self.device)
            before = _perf_counter_ns()
            _synchronize(self.device)
            costs.append((_perf_counter_ns() - before) / 1e6)
        return statistics.median(costs)

    def sample(self) -> tuple[float, float]:
        """One sample of the prepared function: (ms per call, wall ms per call)."""
        if self.method in SINGLE_METHODS:  # `batch` calls, each in a window of its own: their mean
            timed = []
            for _ in range(self.batch):
                self.flush()
                if self.before_call:
                    self.before_call()
                timed.append(self.window(self.once))
            return tuple(sum(column) / self.batch for column in zip(*timed))
        if self.method == "cuda_graph":
            assert self.graphs is not None  # the method is cuda_graph only once both are captured
            graph_calls, graph_flushes = self.graphs
            calls, flushes = graph_calls.replay, graph_flushes.replay if graph_flushes else None
        else:
            calls, flushes = self.batched_calls, self.batched_flushes if self.cold_cache else None
        # The GPU comes back from idle (the other side's turn, the IPC between) at another clock, which
        # biases whichever window runs first: one untimed batch first, then calls and flushes in
        # A B B A order, so that a drift within the sample cancels from the difference.
        (flushes or calls)()
        self.snapshots = []
        window, then = (self.graph_window, self.snapshot_output) if self.method == "cuda_graph" else (self.window, None)
        timed = [window(body, then if body is calls else None) if body else (0.0, 0.0)
                 for body in (calls, flushes, flushes, calls)]
        return tuple(max((a1 + a2 - b1 - b2) / (2 * self.batch), FLOOR_MS) for a1, b1, b2, a2 in zip(*timed))

    def graph_window(self, body: Callable[[], object], then: Callable[[], None] | None) -> tuple[float, float]:
        """A graph's window, timed again while its launch outlasted the lead spin (LATE_LAUNCH_RETRIES): one launch
        call fits behind the spin unless the host stalled, and a stall inside the window is the host's time."""
        for attempt in range(LATE_LAUNCH_RETRIES + 1):
            if attempt and then is not None:
                self.snapshots.pop()  # the late window's copy: the judge draws among the kept windows' copies
            timed = self.window(body, then)
            if not self.launch_late:
                break
        return timed

    def batched_calls(self) -> None:
        self.last_output = None
        for _ in range(self.batch):
            self.flush()
            if self.before_call:  # (inside the window here: both sides restore a state of the problem's size)
                self.before_call()
            self.last_output = self.fn()

    def batched_flushes(self) -> None:
        for _ in range(self.batch):
            self.flush()


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to float rounding (floats, complex), or exactly (integers, bools: no float-only ops on them)."""
    if a.is_floating_point() or a.is_complex():
        return torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
    return torch.equal(a, b)


def blocking_stream(device: torch.device) -> torch.cuda.Stream:
    """A new stream with blocking semantics (cudaStreamCreate), unlike torch's pool streams (non-blocking). A kernel
    launched on the legacy default stream (`<<<grid, block>>>` with no stream) while a blocking stream is captured is
    an error, which fails the capture: while a non-blocking one is captured, it runs at once, outside the graph, and
    every replay leaves it out. Where no such stream can be made, a pool stream (and the replay checks) it is. One
    a Timer, never destroyed: a worker lives for one pair."""
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
    """A copy of a call's output: its plain tensors cloned, a tuple or list of them as such; anything else (a tensor
    subclass too, whose clone would run the candidate's code behind the window) as it is, for the checks to name."""
    if type(out) is torch.Tensor:
        return out.clone()
    if type(out) in (tuple, list):
        return type(out)(x.clone() if type(x) is torch.Tensor else x for x in out)
    return out


def output_tensors(out) -> list:
    """The tensors of a call's output (a tensor, or a tuple or list of them)."""
    items = out if isinstance(out, (tuple, list)) else [out]
    return [t for t in items if isinstance(t, torch.Tensor)]


def single_windows(call_ms: float) -> int:
    """How many single-call windows a sample of a call this long times (SAMPLE_TARGET_MS)."""
    return max(1, min(MAX_SINGLE_WINDOWS, round(SAMPLE_TARGET_MS / call_ms)))


@contextlib.contextmanager
def threads(count: int):
    """torch's CPU threads set to `count` for a while (the judge computes single-threaded on CPU runs, but times a cache
    flush as the workers, with PyTorch's default threads, make it)."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def work_per_sample(method: str, batch: int, cold_cache: bool) -> tuple[int, int]:
    """(calls, flushes) one `Timer.sample` runs, timed or not: what the judge's wall clock must account for.
    One of each per window for single windows; for batched methods
    one untimed batch (of flushes, or of calls on a hot cache), then calls, flushes, flushes, calls."""
    if method in SINGLE_METHODS:
        return batch, batch * int(cold_cache)
    return (2 * batch, 5 * batch) if cold_cache else (3 * batch, 0)


def window_lead_us(method: str, lead_us: float) -> float:
    """The GPU spin before each window of this method: lead_us (the config's launch_lead_us), and at least GRAPH_LEAD_US
    before a graph's windows; none on the CPU or when lead_us is 0."""
    if method == "perf_counter" or not lead_us:
        return 0.0
    return max(lead_us, GRAPH_LEAD_US) if method == "cuda_graph" else lead_us


def peak_memory_mb(device: torch.device) -> float:
    """Peak memory of this process: the caching allocator's on a GPU, the resident set on the CPU."""
    if device.type == "cuda":
        return torch.cuda.max_memory_reserved(device) / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def out_of_memory_count(device: torch.device) -> Optional[int]:
    """Allocations in this process that found no GPU memory, those a library caught included: cuDNN, for one, tries
    its algorithms in turn and takes the first whose workspace it can allocate (None on the CPU, or where the allocator
    keeps no statistics)."""
    return torch.cuda.memory_stats(device).get("num_ooms") if device.type == "cuda" else None


def now_ns() -> int:
    """The bound perf_counter_ns."""
    return _perf_counter_ns()
