"""Verdict attack: tries to shrink the problem's inputs by changing its module constants in this process.
The judge draws the inputs in its own process from its own copy of the problem, so the candidate gets
full-size inputs and is judged (and timed) on them."""
import sys

import torch
import torch.nn as nn

for module in list(sys.modules.values()):
    if hasattr(module, "get_inputs") and hasattr(module, "batch_size"):
        module.batch_size = 1


class ModelNew(nn.Module):
    def forward(self, x):
        assert x.shape[0] > 1, "the inputs shrank"
        return torch.relu(x)
