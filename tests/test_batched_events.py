"""batched_events (harness/common/methods/batched_events.py): a batch of calls a window, about 2 ms of them (no more
than 20 ms of the host's clock), the other side's batch when it has one; a sample is A B B A by difference."""
import torch

from harness.common.methods import Asked, Measured, batched_events
from harness.worker import timing


def test_a_batch_is_about_two_milliseconds_of_calls_or_the_other_sides():
    assert batched_events.batch_for(Measured(single_ms=0.01, single_wall_ms=0.01), Asked()) == 200
    assert batched_events.batch_for(Measured(single_ms=0.01, single_wall_ms=1.0), Asked()) == 20  # the host's clock
    assert batched_events.batch_for(Measured(single_ms=5.0, single_wall_ms=5.0), Asked()) == 2
    assert batched_events.batch_for(Measured(), Asked(batch=10**6)) == batched_events.MAX_BATCH


def test_a_sample_is_the_calls_windows_less_the_flushes_per_call(monkeypatch):
    timer = timing.Timer(torch.device("cpu"), cold_cache=True)
    timer.fn, timer.batch, timer.method = (lambda: torch.ones(2)), 3, "batched_events"
    bodies = []

    def window(body, then=None):
        bodies.append(body)
        body()
        return (7.0, 7.0) if len(bodies) in (1, 4) else (1.0, 1.0)

    monkeypatch.setattr(timer, "window", window)
    assert timer.sample() == (2.0, 2.0)  # (7 + 7 - 1 - 1) / (2 x 3)
    assert len(bodies) == 4 and bodies[0] is bodies[3] and bodies[1] is bodies[2]
