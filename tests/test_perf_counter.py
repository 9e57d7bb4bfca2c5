"""perf_counter (harness/common/methods/perf_counter.py): the CPU's method, a window per call on the host's clock,
always chosen there, never on a GPU."""
import torch

from harness.common import methods
from harness.worker import timing


def test_the_cpu_times_on_the_hosts_clock_a_window_per_call():
    timer = timing.Timer(torch.device("cpu"), cold_cache=False)
    assert timer.prepare(lambda: torch.ones(4) * 2, warmup=1, batched=True, batch=8) == "perf_counter"
    assert timer.batch == 1 and timer.declared.host_clock and timer.declared.lead_us(100.0) == 0.0
    assert methods.PERF_COUNTER.chosen(timer, methods.Measured(), methods.Asked(batched=True))
