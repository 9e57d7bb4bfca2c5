"""cuda_event: each call in a window of its own between two CUDA events, `batch` windows a sample; chosen for a call
of at least SHORT_CALL_MS (a launch is then no part of the result), or for a stateful model (restored between calls,
outside the windows), unless the other side batches."""
from __future__ import annotations

from dataclasses import dataclass

from harness.common.methods.method import Asked, Measured, Method

SHORT_CALL_MS = 0.2  # batched below: a launch must not be the result
SAMPLE_TARGET_MS = 10.0  # docs/decisions/worker-sample-windows.md
MAX_SINGLE_WINDOWS = 16


@dataclass(frozen=True)
class SingleWindows(Method):
    """A window per call."""

    def chosen(self, timer, measured: Measured, asked: Asked) -> bool:
        long_enough = measured.single_ms >= SHORT_CALL_MS or timer.before_call is not None
        if not long_enough or asked.batched or asked.batch is not None:
            return False
        timer.batch = asked.windows if asked.windows is not None else single_windows(measured.single_ms)
        return True

    def sample(self, timer) -> tuple[float, float]:
        timed = []
        for _ in range(timer.batch):
            timer.flush()
            if timer.before_call:
                timer.before_call()
            timed.append(timer.window(timer.once))
        ms, wall = (sum(column) / timer.batch for column in zip(*timed))
        return ms, wall


def single_windows(call_ms: float) -> int:
    """Single windows a sample takes of a call this long (SAMPLE_TARGET_MS)."""
    return max(1, min(MAX_SINGLE_WINDOWS, round(SAMPLE_TARGET_MS / call_ms)))


CUDA_EVENT = SingleWindows("cuda_event", batched=False)
