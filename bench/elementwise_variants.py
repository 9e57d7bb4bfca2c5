"""Which launch shape gets a 16-byte-vector sigmoid closest to the copy bandwidth? Times variants of the
kernel in solutions/sigmoid/sol_vectorized.py (vectors per thread, threads per block, streaming cache hints)
against torch.sigmoid and a device copy on the problem's 4096 x 393216 float32 input, one JSON line each.

Usage (on a GPU): python3 bench/elementwise_variants.py
"""
import json

import torch
from torch.utils.cpp_extension import load_inline

from cuda_clock import median_ms  # bench/ is the script's folder

VARIANTS = [(4, 256, True), (4, 256, False), (2, 256, False), (8, 256, False), (4, 128, False), (4, 512, False),
            (8, 128, True), (2, 512, True), (1, 256, False)]  # (vectors per thread, threads per block, hints)

CUDA = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

template <int UNROLL, int THREADS, bool HINTS>
__global__ void sigmoid_vectors(const float4* __restrict__ x, float4* __restrict__ y, int64_t n_vectors) {
    const int64_t first = static_cast<int64_t>(blockIdx.x) * THREADS * UNROLL + threadIdx.x;
    float4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        const int64_t i = first + static_cast<int64_t>(u) * THREADS;
        if (i < n_vectors) v[u] = HINTS ? __ldcs(x + i) : x[i];
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        const int64_t i = first + static_cast<int64_t>(u) * THREADS;
        if (i < n_vectors) {
            float* e = reinterpret_cast<float*>(&v[u]);
#pragma unroll
            for (int k = 0; k < 4; ++k) e[k] = 1.0f / (1.0f + expf(-e[k]));
            if (HINTS) __stcs(y + i, v[u]); else y[i] = v[u];
        }
    }
}

template <int UNROLL, int THREADS, bool HINTS>
void launch(const at::Tensor& x, at::Tensor& y) {
    const int64_t n_vectors = x.numel() / 4;
    const int64_t blocks = (n_vectors + THREADS * UNROLL - 1) / (THREADS * UNROLL);
    sigmoid_vectors<UNROLL, THREADS, HINTS><<<blocks, THREADS, 0, c10::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const float4*>(x.data_ptr<float>()), reinterpret_cast<float4*>(y.data_ptr<float>()), n_vectors);
}

void run(torch::Tensor x, torch::Tensor y, int64_t unroll, int64_t threads, bool hints) {
#define VARIANT(U, T, H) if (unroll == U && threads == T && hints == H) return launch<U, T, H>(x, y);
    VARIANT(4, 256, true) VARIANT(4, 256, false) VARIANT(2, 256, false) VARIANT(8, 256, false)
    VARIANT(4, 128, false) VARIANT(4, 512, false) VARIANT(8, 128, true) VARIANT(2, 512, true) VARIANT(1, 256, false)
    TORCH_CHECK(false, "no such variant");
}
"""


def main():
    ext = load_inline("elementwise_variants", cpp_sources="void run(torch::Tensor x, torch::Tensor y, int64_t unroll, int64_t threads, bool hints);",
                      cuda_sources=CUDA, functions=["run"], extra_cuda_cflags=["-O3"])
    x = torch.rand(4096, 393216, device="cuda")
    y = torch.empty_like(x)
    nbytes = 2 * x.numel() * 4
    expected = torch.sigmoid(x)
    rows = {"copy": median_ms(lambda: y.copy_(x)), "torch.sigmoid": median_ms(lambda: torch.sigmoid(x, out=y))}
    for unroll, threads, hints in VARIANTS:
        ext.run(x, y, unroll, threads, hints)
        assert torch.allclose(y, expected, rtol=1e-6, atol=0)
        rows[f"unroll={unroll} threads={threads} hints={hints}"] = median_ms(lambda: ext.run(x, y, unroll, threads, hints))
    for name, ms in rows.items():
        print(json.dumps({"variant": name, "ms": round(ms, 4), "gbps": round(nbytes / ms / 1e6, 1),
                          "vs_copy": round(rows["copy"] / ms, 4), "vs_torch": round(rows["torch.sigmoid"] / ms, 4)}), flush=True)


if __name__ == "__main__":
    main()
