"""What every timing method is: its declaration (read by the judge, which agrees both sides and sets the resolution
from it, and by the worker) and the two steps the worker's Timer asks of it: is it chosen for this call, and one
sample. A method is one file beside this one, listed in methods/__init__.py."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


@dataclass(frozen=True)
class Measured:
    """What the Timer measured of one call before choosing (ms; 0 on the CPU, where nothing is measured first)."""

    single_ms: float = 0.0
    single_wall_ms: float = 0.0
    flush_ms: float = 0.0
    flush_wall_ms: float = 0.0


@dataclass(frozen=True)
class Asked:
    """What the judge asks of this side: the other side's choice, so that both time alike."""

    allow_graph: bool = True
    batched: bool = False  # the other side batches: this one must
    batch: Optional[int] = None  # the other side's batch
    windows: Optional[int] = None  # the other side's single windows a sample


@dataclass(frozen=True)
class Method:
    """One way to time a call (docs/judging.md); the worker's Timer samples by it."""

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

    def chosen(self, timer: Any, measured: Measured, asked: Asked) -> bool:
        """Does this method time the Timer's call? If so it has set what it needs (the batch, a graph)."""
        raise NotImplementedError(self.name)

    def sample(self, timer: Any) -> tuple[float, float]:
        """One sample: (ms per call, wall ms per call)."""
        raise NotImplementedError(self.name)

    def re_placed(self, timer: Any) -> None:
        """After the worker re-placed the timed memory (Worker.op_replace): one call lands its output anew."""
        timer.once()
