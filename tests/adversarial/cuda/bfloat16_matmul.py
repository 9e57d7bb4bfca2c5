"""Semantic attack on matmul_sigmoid_sum: the GEMM in bfloat16. Its outputs (row sums of sigmoids) are
large, so float32's rtol=1e-4 may pass it; the float64 truth shows it is far less accurate."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.linear = nn.Linear(input_size, hidden_size)

    def forward(self, x):
        y = torch.nn.functional.linear(x.bfloat16(), self.linear.weight.bfloat16(), self.linear.bias.bfloat16())
        return torch.sigmoid(y.float()).sum(dim=1, keepdim=True)
