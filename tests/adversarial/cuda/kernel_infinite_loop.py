"""Fault: a CUDA kernel that never ends."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>
__global__ void spin(float* out) { volatile int i = 0; while (true) { i = i + 1; } }
torch::Tensor hang(torch::Tensor x) {
    auto out = torch::empty_like(x);
    spin<<<1, 1>>>(out.data_ptr<float>());
    return out;
}
"""
ext = load_inline(name="adv_kernel_loop", cpp_sources="torch::Tensor hang(torch::Tensor x);",
                  cuda_sources=cuda_source, functions=["hang"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.hang(x)
