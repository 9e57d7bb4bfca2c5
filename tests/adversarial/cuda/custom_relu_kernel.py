"""Control: an honest CUDA relu kernel (correct, no flags about its kernel)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>
__global__ void relu_kernel(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor my_relu(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    long n = xc.numel();
    relu_kernel<<<(n + 255) / 256, 256>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
ext = load_inline(name="adv_custom_relu", cpp_sources="torch::Tensor my_relu(torch::Tensor x);",
                  cuda_sources=cuda_source, functions=["my_relu"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.my_relu(x)
