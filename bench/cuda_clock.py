"""The bench scripts' plain clock: the median of back-to-back calls, each between two CUDA events."""
import statistics

import torch


def median_ms(fn, calls=20):
    """Median milliseconds of fn over `calls` calls, after three warm-up calls (no cache flush)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)
