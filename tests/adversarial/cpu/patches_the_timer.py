"""Timing attack: the candidate knows our source and patches the worker's bound clock so that every
window reads 20x shorter. The judge's own clock around each request disagrees: timer_tampering."""
from harness.worker import timing
import torch
import torch.nn as nn

real = timing._perf_counter_ns
start = real()
timing._perf_counter_ns = lambda: start + (real() - start) // 20


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        for _ in range(1000):  # real work (a few ms) the forged clock hides
            y = torch.relu(y)
        return y
