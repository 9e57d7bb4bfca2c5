"""GEMM through ATen's BLAS (addmm), then sigmoid and the row sum fused into one pass that reads the
GEMM output once and writes one number per row (accumulated in double, rows split across threads).
Runs on the CPU without a GPU."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <cmath>

torch::Tensor matmul_sigmoid_rowsum(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
  TORCH_CHECK(x.device().is_cpu(), "expects CPU tensors");
  auto y = torch::addmm(bias, x, weight.t()).contiguous();
  const int64_t rows = y.size(0), cols = y.size(1);
  auto out = torch::empty({rows, 1}, y.options());
  AT_DISPATCH_FLOATING_TYPES(y.scalar_type(), "matmul_sigmoid_rowsum", [&] {
    const scalar_t* p = y.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    at::parallel_for(0, rows, 1, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        double acc = 0.0;  // double: the sum of 32768 terms keeps float32 accuracy
        for (int64_t c = 0; c < cols; ++c) acc += 1.0 / (1.0 + std::exp(-static_cast<double>(p[r * cols + c])));
        o[r] = static_cast<scalar_t>(acc);
      }
    });
  });
  return out;
}
"""

fused = load_inline(
    name="matmul_sigmoid_rowsum_cpu",
    cpp_sources=cpp_source,
    functions=["matmul_sigmoid_rowsum"],
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.linear = nn.Linear(input_size, hidden_size)  # same name as the reference: weights are shared

    def forward(self, x):
        return fused.matmul_sigmoid_rowsum(x, self.linear.weight, self.linear.bias)
