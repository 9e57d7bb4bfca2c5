"""Sanity: adds tiny random noise (inside the tolerance): two runs on the same input differ."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        return y + y * 1e-6 * torch.randn_like(y)
