"""cuda_event (harness/common/methods/cuda_event.py): a window per call, as many a sample as make about 10 ms; chosen for
a long call unless the other side batches."""
import torch

from harness.common.methods import Asked, Measured, cuda_event
from harness.worker import timing


def test_single_windows_a_sample_add_up_to_about_the_target():
    assert cuda_event.single_windows(20.0) == 1 and cuda_event.single_windows(10.0) == 1
    assert cuda_event.single_windows(2.0) == 5 and cuda_event.single_windows(4.0) in (2, 3)
    assert cuda_event.single_windows(0.2) == cuda_event.MAX_SINGLE_WINDOWS


def test_a_long_call_is_timed_a_window_each_unless_the_other_side_batches():
    timer = timing.Timer(torch.device("cpu"), cold_cache=False)
    assert cuda_event.CUDA_EVENT.chosen(timer, Measured(single_ms=2.0), Asked()) and timer.batch == 5
    assert cuda_event.CUDA_EVENT.chosen(timer, Measured(single_ms=2.0), Asked(windows=3)) and timer.batch == 3
    assert not cuda_event.CUDA_EVENT.chosen(timer, Measured(single_ms=2.0), Asked(batched=True))
    assert not cuda_event.CUDA_EVENT.chosen(timer, Measured(single_ms=0.05), Asked())
    timer.before_call = lambda: None  # a stateful model's restore: outside the windows, so a window per call
    assert cuda_event.CUDA_EVENT.chosen(timer, Measured(single_ms=0.05), Asked())
