"""A broken problem: outputs so small that all zeros pass the absolute tolerance."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 1e-7


def get_inputs():
    return [torch.rand(8, 64)]


def get_init_inputs():
    return []
