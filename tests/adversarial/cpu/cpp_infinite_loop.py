"""Fault: an infinite loop inside a compiled C++ kernel (no Python frame to interrupt)."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
torch::Tensor spin(torch::Tensor x) {
    volatile long i = 0;
    while (true) { i = i + 1; }
    return x;
}
"""
ext = load_inline(name="adv_cpp_infinite_loop", cpp_sources=source, functions=["spin"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.spin(x)
