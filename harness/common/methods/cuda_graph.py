"""cuda_graph: batched_events' windows A B B A, each a replay of a CUDA graph captured of `batch` x (flush, call) (and
one of the flushes alone), so that no launch is timed; chosen for a short call where the judge allows a graph and a
replay reproduces the call, on halved inputs too (docs/decisions/worker-graph-capture.md). Its inputs and output stay
where the capture found them; a window whose replay launched late is timed again."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

import torch

from harness.common.check import output_tensors
from harness.common.methods.batched_events import batch_for
from harness.common.methods.method import Asked, Measured, Method

_CUDAGraph = torch.cuda.CUDAGraph  # bound at import: before candidate code can patch them
_graph = torch.cuda.graph

LATE_LAUNCH_RETRIES = 3


@dataclass(frozen=True)
class GraphReplays(Method):
    """Replays of captured graphs."""

    def chosen(self, timer, measured: Measured, asked: Asked) -> bool:
        if not asked.allow_graph:
            return False
        timer.batch = batch_for(measured, asked)
        try:
            capture_both(timer)
            if not replay_reproduces_call(timer):
                raise RuntimeError("the graph's replay does not reproduce the call")
            return True
        except Exception:  # a call that syncs, say, cannot be captured
            timer.sync()
            timer.graphs = None
            return False

    def sample(self, timer) -> tuple[float, float]:
        assert timer.graphs is not None
        graph_calls, graph_flushes = timer.graphs
        flushes = graph_flushes.replay if graph_flushes else None
        return timer.abba(graph_calls.replay, flushes, lambda body, then: graph_window(timer, body, then),
                          then=timer.snapshot_output)

    def re_placed(self, timer) -> None:
        capture_both(timer)


def capture_both(timer) -> None:
    """The calls' graph, and with a cold cache the flushes' (again after a re-placing: Worker.op_replace)."""
    timer.graphs = (capture(timer, with_call=True), capture(timer, with_call=False) if timer.cold_cache else None)


def capture(timer, with_call: bool):
    """A graph of `batch` x (flush, call), or of the flushes, on a blocking stream."""
    graph = _CUDAGraph()
    if timer.capture_stream is None:
        timer.capture_stream = blocking_stream(timer.device)
    side = timer.capture_stream
    side.wait_stream(torch.cuda.current_stream(timer.device))
    with torch.cuda.stream(side):  # torch's advice: once on the side stream first
        timer.once() if with_call else timer.flush()
    torch.cuda.current_stream(timer.device).wait_stream(side)
    generator = torch.cuda.default_generators[timer.device.index if timer.device.index is not None
                                              else torch.cuda.current_device()]
    outside = generator.graphsafe_get_state()
    generator.graphsafe_set_state(generator.clone_state())  # a failed capture breaks the state it holds
    try:
        with _graph(graph, stream=side):
            for _ in range(timer.batch):
                timer.flush()
                if with_call:
                    timer.last_output = timer.fn()  # rewritten by each replay
    finally:
        generator.graphsafe_set_state(outside)
    timer.sync()
    return graph


def replay_reproduces_call(timer) -> bool:
    """Does a replay match a call, on halved inputs too? docs/decisions/worker-graph-capture.md"""
    if not replay_matches_call(timer):
        return False
    halved = []
    try:
        with torch.no_grad():
            for x in timer.inputs:
                x.mul_(0.5)
                halved.append(x)
        return not halved or replay_matches_call(timer)
    finally:
        with torch.no_grad():
            for x in halved:
                x.mul_(2.0)


def replay_matches_call(timer) -> bool:
    """One call, then a replay over its output's copy: the same values?"""
    expected = [t.clone() for t in output_tensors(timer.fn())]
    timer.sync()
    replayed = output_tensors(timer.last_output)
    if not expected or len(expected) != len(replayed):
        return False
    for t, e in zip(replayed, expected):  # contents the replay must overwrite to pass
        t.copy_(e.logical_not() if e.dtype == torch.bool else
                e + 1 if not (e.is_floating_point() or e.is_complex()) else torch.full_like(e, float("nan")))
    assert timer.graphs is not None
    timer.graphs[0].replay()
    timer.sync()
    return all(a.shape == b.shape and same_values(a, b) for a, b in zip(expected, replayed))


def graph_window(timer, body, then) -> tuple[float, float]:
    """A graph's window, timed again while its launch is late (LATE_LAUNCH_RETRIES)."""
    for attempt in range(LATE_LAUNCH_RETRIES + 1):
        if attempt and then is not None:
            timer.snapshots.pop()  # the late window's copy
        timed = timer.window(body, then)
        if not timer.launch_late:
            break
    return timed


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


CUDA_GRAPH = GraphReplays("cuda_graph", batched=True, graph=True, min_lead_us=1000.0,
                          resolution_key="batched_resolution_pct")  # docs/decisions/process-offset.md
