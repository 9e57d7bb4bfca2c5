"""KernelBench level1 33_BatchNorm computed as inference does: with the running statistics (fresh ones: mean 0,
variance 1), folded into one scale and shift per channel. Right in eval mode, wrong in training mode, where
BatchNorm uses the batch's statistics: incorrect in the harness's default mode, as in KernelBench."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x):
        bn = self.bn
        scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        shift = bn.bias - bn.running_mean * scale
        return x * scale.view(1, -1, 1, 1) + shift.view(1, -1, 1, 1)
