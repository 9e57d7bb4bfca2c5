"""Sigmoid computed honestly with three extra full-size temporaries alive at once (issue 37: an honest candidate of
the reference's size, four outputs' worth of its own memory, must be judged, never blamed for the harness's memory)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = x * 1.0
        b = a + 0.0
        c = b.neg().neg()
        out = torch.sigmoid(c)
        del a, b
        return out
