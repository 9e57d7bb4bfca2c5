"""Sigmoid as one Triton kernel: each program reads a block of the flattened input and writes 1/(1+exp(-x)),
computed in float32 whatever the input dtype (so float16/bfloat16 runs keep full accuracy in the math)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 4096  # elements per program: 16 KB of float32, enough in flight per SM for a memory-bound kernel


@triton.jit
def sigmoid_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK  # int64: a 6.4 GB input has more elements than int32 offsets reach
    offsets = start + tl.arange(0, BLOCK)
    mask = offsets < n  # the tail block
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = 1.0 / (1.0 + tl.exp(-x))
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()  # a strided input is made dense once; the kernel reads flat memory
        y = torch.empty_like(x)
        n = x.numel()
        sigmoid_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
        return y
