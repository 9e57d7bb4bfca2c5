"""Sanity: adds tiny random noise (inside the tolerance) from a generator of its own, seeded by the OS (the harness
seeds torch's RNG before each call, so noise from it would repeat): two runs on the same input differ."""
import os

import torch
import torch.nn as nn

NOISE = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        return y + y * 1e-6 * torch.randn(y.shape, generator=NOISE)
