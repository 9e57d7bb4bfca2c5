"""batched_events: `batch` calls a window, each behind its flush, in windows A B B A (calls, flushes, flushes, calls)
after an untimed batch; a call's cost is the difference per call. For calls under cuda_event's SHORT_CALL_MS, where
one launch would be the result; the graph method is preferred where a graph reproduces the call."""
from __future__ import annotations

import math
from dataclasses import dataclass

from harness.common.methods.method import Asked, Measured, Method

BATCH_TARGET_MS = 2.0
WALL_BATCH_LIMIT_MS = 10 * BATCH_TARGET_MS  # by the host's clock
MAX_BATCH = 4096


@dataclass(frozen=True)
class BatchedWindows(Method):
    """`batch` calls a window, run from Python."""

    def chosen(self, timer, measured: Measured, asked: Asked) -> bool:
        timer.batch, timer.graphs = batch_for(measured, asked), None
        return True

    def sample(self, timer) -> tuple[float, float]:
        return timer.abba(lambda: calls(timer), (lambda: flushes(timer)) if timer.cold_cache else None, timer.window)


def batch_for(measured: Measured, asked: Asked) -> int:
    """Calls a window: the other side's, else about BATCH_TARGET_MS of them (and at most WALL_BATCH_LIMIT_MS of the
    host's clock: a forged event clock reads ~0)."""
    if asked.batch is not None:
        return min(MAX_BATCH, max(2, asked.batch))
    by_events = math.ceil(BATCH_TARGET_MS / max(measured.single_ms + measured.flush_ms, 1e-3))
    by_wall = math.ceil(WALL_BATCH_LIMIT_MS / max(measured.single_wall_ms + measured.flush_wall_ms, 1e-3))
    return min(MAX_BATCH, max(2, min(by_events, by_wall)))


def calls(timer) -> None:
    """`batch` calls, each behind its flush (and a stateful model's restore: both sides restore alike)."""
    timer.last_output = None
    for _ in range(timer.batch):
        timer.flush()
        if timer.before_call:
            timer.before_call()
        timer.last_output = timer.fn()


def flushes(timer) -> None:
    for _ in range(timer.batch):
        timer.flush()


BATCHED_EVENTS = BatchedWindows("batched_events", batched=True, resolution_key="batched_resolution_pct")
