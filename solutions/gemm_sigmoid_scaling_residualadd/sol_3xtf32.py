"""Gemm + Sigmoid + scaling + residual add at the speed of light, to float32 accuracy.

The reference spends nearly all its time in a float32 GEMM (1024 x 8192 x 8192), which on an H100 runs on the
CUDA cores. Plain TF32 tensor cores are ~8x faster but keep 10 mantissa bits: measured, its error was 6x (the
problem's inputs) to 38x (wider inputs) the float32 tolerance (bench/results/split-tf32-accuracy-h100.jsonl).
So the GEMM uses the 3xTF32 split instead (as in CUTLASS): each float32 value is v = hi + lo, with hi rounded
to TF32 and lo = v - hi exact, and

    x @ w.T ~= x_hi @ w_hi.T + x_lo @ w_hi.T + x_hi @ w_lo.T

on TF32 tensor cores with float32 accumulation. The dropped x_lo @ w_lo.T term is ~2^-22 relative. Tensor
cores do not round each addition to nearest, so the long product runs in K-chunks of 1024 summed in cuBLAS's
epilogue (see gemm_tf32): measured on the H100, the result is then as accurate as a float32 GEMM. The three
products take two GEMMs: [x_hi; x_lo] stacked on the rows times w_hi (M = 2048), then x_hi times w_lo added
into the top half. One epilogue pass then adds the
two halves and the bias and applies y + scale * sigmoid(y), so the three elementwise ops of the reference
cost one read and one write.

The weight split is cached and recomputed whenever the weight changes (its pointer, version counter, dtype
or device), so a new weight is never answered with the old one. Other dtypes (--precision fp16/bf16) use
cuBLAS at that dtype, as the reference does, and the same fused epilogue.
Known limits: an infinite input gives NaN here where a float32 GEMM may give +-inf (inf * 0 in the split); a
weight written through `.data` (which bypasses the version counter) is not seen until its pointer changes.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/Exceptions.h>
#include <c10/cuda/CUDAException.h>

constexpr int THREADS = 256;

// Round to the nearest TF32 value (10 explicit mantissa bits), so that tensor cores use hi exactly.
__device__ __forceinline__ float tf32_high(float v) {
    if (!isfinite(v)) return v;
    const float rounded = __uint_as_float((__float_as_uint(v) + 0x1000u) & 0xffffe000u);
    return isfinite(rounded) ? rounded : __uint_as_float(__float_as_uint(v) & 0xffffe000u);  // top of the range
}

// parts[0] = hi, parts[1] = lo (= v - hi, exact in float32), for a flat tensor of n values.
__global__ void split_tf32_kernel(const float* __restrict__ v, float* __restrict__ parts, int64_t n) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * THREADS + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * THREADS) {
        const float x = v[i];
        const float hi = tf32_high(x);
        parts[i] = hi;
        parts[n + i] = isfinite(x) ? x - hi : 0.0f;
    }
}

int grid_for(int64_t n) {
    return static_cast<int>(std::min<int64_t>((n + THREADS - 1) / THREADS, 65536));
}

// [2, *v.shape]: the TF32 high parts, then the low parts.
torch::Tensor split_tf32(torch::Tensor v) {
    TORCH_CHECK(v.is_cuda() && v.scalar_type() == at::kFloat, "split_tf32: expected a float32 CUDA tensor");
    const at::Tensor src = v.contiguous();
    std::vector<int64_t> shape{2};
    shape.insert(shape.end(), src.sizes().begin(), src.sizes().end());
    at::Tensor parts = at::empty(shape, src.options());
    const int64_t n = src.numel();
    if (n > 0) {
        split_tf32_kernel<<<grid_for(n), THREADS, 0, c10::cuda::getCurrentCUDAStream()>>>(
            src.data_ptr<float>(), parts.data_ptr<float>(), n);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return parts;
}

// Tensor cores accumulate in float32 without rounding each addition to nearest, so a long K drifts: with
// K = 8192 in one piece, this problem's result was off by 2.0e-4 against float64, where a float32 GEMM's is
// off by 3.7e-5 (wide inputs, bench/results/split-tf32-accuracy-h100.jsonl). Long products are therefore
// done in K-chunks of K_CHUNK, each added to c in cuBLAS's epilogue, which rounds to nearest: with 1024 the
// error was 2.5e-5.
constexpr int64_t K_CHUNK = 1024;

// c[M, N] = a[M, K] @ b[N, K].T + beta * c on TF32 tensor cores, K_CHUNK columns of K at a time (row-major,
// i.e. c.T = b @ a.T in cuBLAS's column-major terms), on the current stream. a and b may be row slices.
void gemm_tf32(const at::Tensor& a, const at::Tensor& b, at::Tensor& c, float beta, int64_t k_chunk) {
    const int64_t M = a.size(0), K = a.size(1), N = b.size(0);
    TORCH_CHECK(a.stride(1) == 1 && b.stride(1) == 1 && c.is_contiguous(), "gemm_tf32: expected row-major operands");
    TORCH_CHECK(std::max({M, N, a.stride(0), b.stride(0)}) < INT_MAX, "gemm_tf32: dimension too large for cuBLAS");
    const float alpha = 1.0f;
    for (int64_t k0 = 0; k0 < K; k0 += k_chunk) {
        const int k = static_cast<int>(std::min(k_chunk, K - k0));
        const float chunk_beta = k0 == 0 ? beta : 1.0f;
        TORCH_CUDABLAS_CHECK(cublasGemmEx(at::cuda::getCurrentCUDABlasHandle(), CUBLAS_OP_T, CUBLAS_OP_N,
            static_cast<int>(N), static_cast<int>(M), k,
            &alpha, b.data_ptr<float>() + k0, CUDA_R_32F, static_cast<int>(b.stride(0)),
            a.data_ptr<float>() + k0, CUDA_R_32F, static_cast<int>(a.stride(0)),
            &chunk_beta, c.data_ptr<float>(), CUDA_R_32F, static_cast<int>(N),
            CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
    }
}

// out = y + scale * sigmoid(y), y = z[i] (+ z2[i]) + bias[col]: the reference's three elementwise ops in one pass.
template <typename T>
__global__ void sigmoid_scale_residual_kernel(const T* __restrict__ z, const T* __restrict__ z2,
                                              const T* __restrict__ bias, T* __restrict__ out,
                                              int64_t n, int64_t cols, float scale) {
    using acc_t = at::opmath_type<T>;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * THREADS + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * THREADS) {
        acc_t y = static_cast<acc_t>(z[i]);
        if (z2 != nullptr) y += static_cast<acc_t>(z2[i]);
        y += static_cast<acc_t>(bias[i % cols]);
        out[i] = static_cast<T>(y + static_cast<acc_t>(scale) * (acc_t(1) / (acc_t(1) + std::exp(-y))));
    }
}

torch::Tensor epilogue(const at::Tensor& z, const at::Tensor* z2, const at::Tensor& bias, double scale) {
    at::Tensor out = at::empty_like(z);
    const int64_t n = z.numel(), cols = z.size(1);
    if (n == 0) return out;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, z.scalar_type(), "epilogue", [&] {
        sigmoid_scale_residual_kernel<scalar_t><<<grid_for(n), THREADS, 0, c10::cuda::getCurrentCUDAStream()>>>(
            z.data_ptr<scalar_t>(), z2 ? z2->data_ptr<scalar_t>() : nullptr, bias.data_ptr<scalar_t>(),
            out.data_ptr<scalar_t>(), n, cols, static_cast<float>(scale));
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
    return out;
}

// float32: 3xTF32 GEMM from the cached weight split [2, N, K], then the fused epilogue.
torch::Tensor forward_fp32(torch::Tensor x, torch::Tensor weight_parts, torch::Tensor bias, double scale) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.dim() == 2, "forward_fp32: expected a 2-D float32 CUDA input");
    const int64_t M = x.size(0), N = weight_parts.size(1);
    const at::Tensor x_parts = split_tf32(x).view({2 * M, x.size(1)});  // rows: x_hi then x_lo
    const at::Tensor w_hi = weight_parts[0], w_lo = weight_parts[1];
    at::Tensor p = at::empty({2 * M, N}, x.options());
    gemm_tf32(x_parts, w_hi, p, 0.0f, K_CHUNK);              // [x_hi; x_lo] @ w_hi.T
    at::Tensor top = p.narrow(0, 0, M);
    gemm_tf32(x_parts.narrow(0, 0, M), w_lo, top, 1.0f, x.size(1));  // + x_hi @ w_lo.T, into the x_hi rows
    const at::Tensor bottom = p.narrow(0, M, M);
    return epilogue(top, &bottom, bias.contiguous(), scale);
}

// Other dtypes: the GEMM at the input's dtype (cuBLAS, as the reference), then the fused epilogue.
torch::Tensor forward_other(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double scale) {
    const at::Tensor z = at::matmul(x, weight.t()).contiguous();
    return epilogue(z, nullptr, bias.contiguous(), scale);
}
"""

cpp_source = """
torch::Tensor split_tf32(torch::Tensor v);
torch::Tensor forward_fp32(torch::Tensor x, torch::Tensor weight_parts, torch::Tensor bias, double scale);
torch::Tensor forward_other(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double scale);
"""

extension = load_inline(
    name="sol_3xtf32_gemm_sigmoid_scaling_residualadd",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["split_tf32", "forward_fp32", "forward_other"],
    extra_cuda_cflags=["-O3"],
    extra_ldflags=["-lcublas"],
)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.gemm = nn.Linear(input_size, hidden_size)  # same name and shape as the reference's, so weights match
        self.scaling_factor = scaling_factor
        self._weight_parts = None
        self._weight_key = None

    def weight_parts(self) -> torch.Tensor:
        """The weight's TF32 split [2, N, K], recomputed whenever the weight has changed in any way."""
        w = self.gemm.weight
        key = (w.data_ptr(), w._version, w.dtype, w.device, tuple(w.shape))
        if key != self._weight_key:
            self._weight_parts = extension.split_tf32(w.detach())
            self._weight_key = key
        return self._weight_parts

    def forward(self, x):
        bias = self.gemm.bias.detach()
        if x.dtype == torch.float32:
            return extension.forward_fp32(x.contiguous(), self.weight_parts(), bias, float(self.scaling_factor))
        return extension.forward_other(x, self.gemm.weight.detach(), bias, float(self.scaling_factor))
