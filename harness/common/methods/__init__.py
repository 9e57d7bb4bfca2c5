"""Timing methods, one file each (method.py: what each declares and does): read by the worker's Timer, which asks them
in PREFERENCE order which one times a call and samples by it, and by the judge, which makes both sides' methods agree
and sets the pair's resolution from their declarations. Records name a method. A new method: a file here, a line
below, and its tests."""
from __future__ import annotations

from harness.common.methods.batched_events import BATCHED_EVENTS
from harness.common.methods.cuda_event import CUDA_EVENT
from harness.common.methods.cuda_graph import CUDA_GRAPH
from harness.common.methods.method import Asked, Measured, Method
from harness.common.methods.perf_counter import PERF_COUNTER

# The first that is chosen times the call: on the host's clock (the CPU) perf_counter; on a GPU a window per call
# for a long call, else a graph where one reproduces the call, else batched windows.
PREFERENCE = (PERF_COUNTER, CUDA_EVENT, CUDA_GRAPH, BATCHED_EVENTS)
METHODS = {m.name: m for m in PREFERENCE}

__all__ = ["Asked", "Measured", "Method", "PREFERENCE", "METHODS", "PERF_COUNTER", "CUDA_EVENT", "CUDA_GRAPH",
           "BATCHED_EVENTS", "named", "is_graph"]


def named(name) -> Method | None:
    """The method of this name, or None (a name our timer never chooses)."""
    return METHODS.get(name) if isinstance(name, str) else None


def is_graph(name) -> bool:
    method = named(name)
    return method is not None and method.graph
