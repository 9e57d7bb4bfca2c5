"""Semantic attack: computes in bfloat16 and returns float32; the float32 tolerance says incorrect."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x.to(torch.bfloat16)).to(torch.float32)
