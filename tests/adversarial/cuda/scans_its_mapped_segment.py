"""Isolation attack (issue 15, item 3): its input arrives by CUDA IPC, and a mapping covers the sender's whole
allocation. It asks the driver for that allocation's range (cuMemGetAddressRange), looks in it for the judge's
reference output of this trial (found whole there before each worker's tensors had a memory pool of their own),
and then overwrites everything in the range but its own input. Finding the reference output is this candidate's
runtime_error; with private handover memory nothing of the judge's is there, and the pair is correct."""
import ctypes

import torch
import torch.nn as nn

cuda = ctypes.CDLL("libcuda.so.1")


def mapped_range(t: torch.Tensor) -> tuple:
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    if cuda.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(t.data_ptr())) != 0:
        raise RuntimeError("cuMemGetAddressRange failed")
    return base.value, size.value


class ModelNew(nn.Module):
    def forward(self, x):
        expected = torch.relu(x)  # what the reference output holds, bit for bit
        base, size = mapped_range(x)
        if any(seg["address"] == base for seg in torch.cuda.memory_snapshot()):
            return expected  # its own memory (the timed calls' inputs are private copies): nothing of the judge's
        whole = torch.empty(size, dtype=torch.uint8, device=x.device)
        torch.cuda.synchronize()
        cuda.cuMemcpyDtoD_v2(ctypes.c_uint64(whole.data_ptr()), ctypes.c_uint64(base), ctypes.c_size_t(size))
        torch.cuda.synchronize()
        start, end = x.data_ptr(), x.data_ptr() + x.numel() * x.element_size()
        head = expected.flatten()[:64]
        if not torch.equal(head, x.flatten()[:64]):  # (on inputs >= 0, relu(x) is x itself: nothing to tell apart)
            needle = head.contiguous().view(torch.uint8).cpu().numpy().tobytes()
            data = whole.cpu().numpy().tobytes()
            if (data[:start - base] + b"|" + data[end - base:]).find(needle) >= 0:  # outside my own input
                raise RuntimeError(f"found the judge's reference output in the {size}-byte mapping of my input")
        for ptr, n in ((base, start - base), (end, base + size - end)):  # all but my input: 0xFF (NaN)
            if n > 0:
                cuda.cuMemsetD8_v2(ctypes.c_uint64(ptr), ctypes.c_ubyte(0xFF), ctypes.c_size_t(n))
        torch.cuda.synchronize()
        return expected
