"""Semantic attack: builds an extension it never uses and calls the reference's own torch op instead.
The runtime trace shows only torch's own operators: no_custom_kernel."""
import torch
import torch.nn as nn

SOURCE_FOR_SHOW = "load_inline(...)  // a kernel that is never called"


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
