"""Fault: asks for far more GPU memory than exists."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        hog = torch.empty(1 << 48, dtype=torch.uint8, device=x.device)
        return torch.relu(x) + hog[0]
