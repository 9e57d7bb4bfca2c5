"""perf_counter: the CPU's method, a window per call on the host's clock (the worker's bound perf_counter_ns)."""
from __future__ import annotations

from dataclasses import dataclass

from harness.common.methods.cuda_event import SingleWindows
from harness.common.methods.method import Asked, Measured


@dataclass(frozen=True)
class HostClock(SingleWindows):
    """A window per call, `batch` (1) a sample; always chosen on the CPU."""

    def chosen(self, timer, measured: Measured, asked: Asked) -> bool:
        return True


PERF_COUNTER = HostClock("perf_counter", batched=False, host_clock=True, resolution_key="cpu_resolution_pct",
                         target_key="cpu_target_ci_pct")
