"""Sigmoid as a C++ CPU kernel: one read and one write per element, split across threads.

Runs without a GPU, so `python run.py --problem sigmoid --device cpu` has a real candidate to judge.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <cmath>

template <typename T>
static void sigmoid_range(const T* x, T* y, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    y[i] = T(1) / (T(1) + std::exp(-x[i]));  // exp overflows to inf for x << 0: 1/inf = 0, still right
  }
}

torch::Tensor sigmoid_cpu(torch::Tensor x) {
  TORCH_CHECK(x.device().is_cpu(), "sigmoid_cpu expects a CPU tensor");
  auto input = x.contiguous();  // non-contiguous inputs: one copy, then the same flat loop
  auto out = torch::empty_like(input);
  AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "sigmoid_cpu", [&] {
    const scalar_t* src = input.data_ptr<scalar_t>();
    scalar_t* dst = out.data_ptr<scalar_t>();
    at::parallel_for(0, input.numel(), 1 << 14, [&](int64_t b, int64_t e) { sigmoid_range(src, dst, b, e); });
  });
  return out;
}
"""

sigmoid_module = load_inline(
    name="sigmoid_cpu_parallel",
    cpp_sources=cpp_source,
    functions=["sigmoid_cpu"],
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return sigmoid_module.sigmoid_cpu(x)
