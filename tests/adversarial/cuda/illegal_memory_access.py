"""Fault: a CUDA kernel that writes far outside its buffer (an illegal memory access)."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>
__global__ void scribble(float* out, long n) { out[n * 1000000000L + threadIdx.x] = 1.0f; }
torch::Tensor bad(torch::Tensor x) {
    auto out = torch::empty_like(x);
    scribble<<<1, 32>>>(out.data_ptr<float>(), x.numel());
    return out;
}
"""
ext = load_inline(name="adv_illegal_access", cpp_sources="torch::Tensor bad(torch::Tensor x);",
                  cuda_sources=cuda_source, functions=["bad"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.bad(x)
