"""GEMM through ATen's BLAS (addmm), then sigmoid, scaling and the residual add fused into one
in-place pass over the GEMM output: one read and one write instead of three kernels and two temporaries.
Runs on the CPU without a GPU."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <cmath>

torch::Tensor gemm_sigmoid_scale_residual(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double scale) {
  TORCH_CHECK(x.device().is_cpu(), "expects CPU tensors");
  auto y = torch::addmm(bias, x, weight.t()).contiguous();
  AT_DISPATCH_FLOATING_TYPES(y.scalar_type(), "gemm_sigmoid_scale_residual", [&] {
    scalar_t* p = y.data_ptr<scalar_t>();
    const scalar_t s = static_cast<scalar_t>(scale);
    at::parallel_for(0, y.numel(), 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const scalar_t v = p[i];
        p[i] = v + s * (scalar_t(1) / (scalar_t(1) + std::exp(-v)));
      }
    });
  });
  return y;
}
"""

fused = load_inline(
    name="gemm_sigmoid_scale_residual_cpu",
    cpp_sources=cpp_source,
    functions=["gemm_sigmoid_scale_residual"],
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.gemm = nn.Linear(input_size, hidden_size)  # same name as the reference: weights are shared
        self.scaling_factor = scaling_factor

    def forward(self, x):
        return fused.gemm_sigmoid_scale_residual(x, self.gemm.weight, self.gemm.bias, float(self.scaling_factor))
