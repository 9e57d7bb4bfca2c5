"""Timing methods as declarations: how each one times a call (docs/judging.md), read by the worker that samples with it
and by the judge that makes both sides' methods agree and sets the pair's resolution. Records name a method."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Method:
    """One way to time a call; the worker's Timer samples by what it declares."""

    name: str
    batched: bool  # `batch` calls a window, their cost per call by difference (else `batch` single windows a sample)
    graph: bool = False  # the calls replay a captured CUDA graph: launches left out, inputs and output fixed in place
    host_clock: bool = False  # timed by the host's perf_counter (the CPU's method), else by CUDA events
    min_lead_us: float = 0.0  # the least spin ahead of a window where there is one (a graph's launch must fit)
    resolution_key: str = "timing_resolution_pct"  # the Config.resolution field of its resolution
    target_key: str = "target_ci_pct"  # the Config.timing field of the CI half-width its rounds aim at

    def work_per_sample(self, batch: int, cold_cache: bool) -> tuple[int, int]:
        """(calls, flushes) one sample runs: what the judge's clock around it must cover."""
        if not self.batched:
            return batch, batch * int(cold_cache)
        # a batch untimed, then windows A B B A: calls, flushes, flushes, calls (each call behind its flush)
        return (2 * batch, 5 * batch) if cold_cache else (3 * batch, 0)

    def lead_us(self, lead_us: float) -> float:
        """The spin ahead of a window, given the configured one (none on the host's clock)."""
        if self.host_clock or not lead_us:
            return 0.0
        return max(lead_us, self.min_lead_us)

    def counts_tail(self) -> bool:
        """Does a window count work left after its end event? Not a graph's (docs/judging.md)."""
        return not self.graph


PERF_COUNTER = Method("perf_counter", batched=False, host_clock=True, resolution_key="cpu_resolution_pct",
                      target_key="cpu_target_ci_pct")
CUDA_EVENT = Method("cuda_event", batched=False)
BATCHED_EVENTS = Method("batched_events", batched=True, resolution_key="batched_resolution_pct")
CUDA_GRAPH = Method("cuda_graph", batched=True, graph=True, min_lead_us=1000.0,
                    resolution_key="batched_resolution_pct")  # docs/decisions/process-offset.md
METHODS = {m.name: m for m in (PERF_COUNTER, CUDA_EVENT, CUDA_GRAPH, BATCHED_EVENTS)}


def named(name) -> Method | None:
    """The method of this name, or None (a name our timer never chooses)."""
    return METHODS.get(name) if isinstance(name, str) else None


def is_graph(name) -> bool:
    method = named(name)
    return method is not None and method.graph
