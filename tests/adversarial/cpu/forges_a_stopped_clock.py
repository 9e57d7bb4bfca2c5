"""Timing attack (the stall of a run on the H100): the worker's bound clock barely moves, so every sample reads
~1 ns while each call really takes 0.2 s. With the rounds capped by the workers' own samples they ran to
max_rounds; the judge's clock caps them now, and its cross-check flags timer_tampering."""
import itertools
import time

from harness.worker import timing
import torch
import torch.nn as nn

ticks = itertools.count()
timing._perf_counter_ns = lambda: next(ticks)


class ModelNew(nn.Module):
    def forward(self, x):
        time.sleep(0.2)
        return torch.relu(x)
