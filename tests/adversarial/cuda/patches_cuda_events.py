"""Timing attack: replaces the worker's bound CUDA event class with one whose elapsed_time is 20x too short.
The judge's own clock around each request disagrees: timer_tampering."""
from harness.worker import timing
import torch
import torch.nn as nn

Real = timing._Event


class ShortEvent(Real):
    def elapsed_time(self, end):
        return super().elapsed_time(end) / 20


timing._Event = ShortEvent


class ModelNew(nn.Module):
    def forward(self, x):
        y = x
        for _ in range(400):  # real work the forged events hide
            y = torch.relu(y)
        return y
