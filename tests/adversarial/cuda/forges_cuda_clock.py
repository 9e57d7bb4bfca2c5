"""Timing attack (the candidate that stalled two runs on the H100): at import, torch.cuda.synchronize becomes a
no-op and torch.cuda.Event.elapsed_time a constant. The worker's events are torch.cuda.Event, so every window
reads 0.001 ms while a call really takes a few ms. Before, that made the timer batch ~1000 calls per window
(seconds per request) and the rounds, capped by the reported samples, ran to max_rounds: a stall. Now the batch is
bounded by the host's clock, the rounds by the judge's, and the judge's clock flags timer_tampering."""
import torch
import torch.nn as nn

torch.cuda.synchronize = lambda device=None: None
torch.cuda.Event.elapsed_time = lambda self, end: 0.001


class ModelNew(nn.Module):
    def forward(self, x):
        y = x
        for _ in range(400):  # real work (a few ms) the forged clock hides
            y = torch.relu(y)
        return y
