"""Timing attack: does its (heavy) work on a side stream that the caller's stream never waits for.
The window closes only when the whole device is idle, so the work is timed all the same."""
import torch
import torch.nn as nn

SIDE = None


class ModelNew(nn.Module):
    def forward(self, x):
        global SIDE
        SIDE = SIDE or torch.cuda.Stream()
        out = torch.empty_like(x)
        SIDE.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(SIDE):
            y = x
            for _ in range(50):
                y = torch.relu(y)
            out.copy_(y)
        return out
