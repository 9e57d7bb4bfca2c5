"""HardSigmoid at the speed of light: a memory-bound kernel that moves 16 bytes per load and per store.

The problem reads 6.4 GB and writes 6.4 GB, so the only thing that matters is keeping HBM busy:
- 16-byte vector loads and stores (4 floats, 8 halves), one vector per thread in a grid that covers the input
  (on the H100 this matched a device copy; unrolling and streaming cache hints measured no faster);
- math in float32 (float64 for double) with torch's own formula, min(max(x + 3, 0), 6) * (1/6), written with
  comparisons that let NaN through as torch does (fmaxf/fminf would turn NaN into 0 or 1);
- a scalar path for the tail (numel not a multiple of the vector) and for misaligned views;
- a strided input is made contiguous first (one extra pass, but always right), and every launch goes on the
  caller's current stream.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

constexpr int THREADS = 256;

template <typename T>
__device__ __forceinline__ T hardsigmoid_of(T x) {
    using acc_t = at::opmath_type<T>;  // float for half/bfloat16/float, double for double
    acc_t v = static_cast<acc_t>(x) + acc_t(3);
    v = v < acc_t(0) ? acc_t(0) : v;  // NaN compares false both times and passes through
    v = v > acc_t(6) ? acc_t(6) : v;
    return static_cast<T>(v * (acc_t(1) / acc_t(6)));
}

// One 16-byte vector per thread. On the H100 this ran at the copy bandwidth; more vectors per thread or
// streaming cache hints were no faster (bench/results/elementwise-variants-h100.jsonl).
template <typename T>
__global__ void hardsigmoid_vectors(const float4* __restrict__ x, float4* __restrict__ y, int64_t n_vectors) {
    constexpr int PER_VECTOR = sizeof(float4) / sizeof(T);
    const int64_t i = static_cast<int64_t>(blockIdx.x) * THREADS + threadIdx.x;
    if (i >= n_vectors) return;
    float4 v = x[i];
    T* e = reinterpret_cast<T*>(&v);
#pragma unroll
    for (int k = 0; k < PER_VECTOR; ++k) e[k] = hardsigmoid_of(e[k]);
    y[i] = v;
}

// One element per thread: the tail after the last whole vector, or everything when a pointer is misaligned.
template <typename T>
__global__ void hardsigmoid_scalars(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * THREADS + threadIdx.x;
    if (i < n) y[i] = hardsigmoid_of(x[i]);
}

torch::Tensor hardsigmoid_forward(torch::Tensor input) {
    TORCH_CHECK(input.is_cuda(), "sol_vectorized hardsigmoid: expected a CUDA tensor");
    TORCH_CHECK(input.is_floating_point(), "sol_vectorized hardsigmoid: expected a floating-point tensor");
    const at::Tensor x = input.contiguous();
    at::Tensor y = at::empty_like(x, at::MemoryFormat::Contiguous);
    const int64_t n = x.numel();
    if (n == 0) return y;
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "hardsigmoid_forward", [&] {
        const scalar_t* xp = x.data_ptr<scalar_t>();
        scalar_t* yp = y.data_ptr<scalar_t>();
        constexpr int64_t PER_VECTOR = sizeof(float4) / sizeof(scalar_t);
        const bool aligned = reinterpret_cast<uintptr_t>(xp) % sizeof(float4) == 0 &&
                             reinterpret_cast<uintptr_t>(yp) % sizeof(float4) == 0;
        const int64_t n_vectors = aligned ? n / PER_VECTOR : 0;
        if (n_vectors > 0) {
            const int64_t blocks = (n_vectors + THREADS - 1) / THREADS;
            hardsigmoid_vectors<scalar_t><<<blocks, THREADS, 0, stream>>>(
                reinterpret_cast<const float4*>(xp), reinterpret_cast<float4*>(yp), n_vectors);
            C10_CUDA_KERNEL_LAUNCH_CHECK();
        }
        const int64_t done = n_vectors * PER_VECTOR;
        if (done < n) {
            const int64_t rest = n - done;
            hardsigmoid_scalars<scalar_t><<<(rest + THREADS - 1) / THREADS, THREADS, 0, stream>>>(xp + done, yp + done, rest);
            C10_CUDA_KERNEL_LAUNCH_CHECK();
        }
    });
    return y;
}
"""

cpp_source = "torch::Tensor hardsigmoid_forward(torch::Tensor input);"

extension = load_inline(
    name="sol_vectorized_hardsigmoid",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["hardsigmoid_forward"],
    extra_cuda_cflags=["-O3"],  # no --use_fast_math: nothing here would gain from it
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return extension.hardsigmoid_forward(x)
