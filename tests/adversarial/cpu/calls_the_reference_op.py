"""Semantic attack: calls the reference's own torch op instead of a kernel of its own.
The runtime trace shows only operators (CPU) or kernels (GPU) the reference launches: no_custom_kernel."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
