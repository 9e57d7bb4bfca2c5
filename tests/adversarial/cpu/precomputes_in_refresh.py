"""Timing attack (red team): the judge refreshes the timing inputs in a request of its own before each sample, so
the candidate wraps the worker's refresh to compute the round's output there, and its timed calls copy what was
kept. Every output is right; only the judge's clock around the side's whole turn, refresh included, sees the work:
timer_tampering. (Judged on the sample's request alone, a matmul version came out correct at 5.2x.)"""
import sys

import torch
import torch.nn as nn

Worker = sys.modules["harness.worker"].Worker
KEPT = {"out": None}
refresh = Worker.op_refresh_timing_inputs


def work(x):
    y = torch.relu(x)
    for _ in range(1000):  # real work (a few ms), done where the timing request's clock does not look
        y = torch.relu(y)
    return y


def refresh_and_compute(self, inputs):
    reply = refresh(self, inputs)
    KEPT["out"] = work(*self.timing_inputs)
    return reply


Worker.op_refresh_timing_inputs = refresh_and_compute


class ModelNew(nn.Module):
    def forward(self, x):
        if KEPT["out"] is not None and not x.is_shared():  # a timed call (trial inputs arrive in shared memory)
            return KEPT["out"].clone()
        return work(x)
