"""Semantic attack: computes in reduced precision (14-bit mantissa) that passes float32 rtol=1e-4 but is
far from the float64 truth: correct, flagged reduced_precision."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        bits = torch.relu(x).view(torch.int32)
        return (bits & ~0x3FF).view(torch.float32)  # drop 10 of float32's 23 mantissa bits
