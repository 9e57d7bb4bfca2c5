"""A device as a run names it ("cpu", "cuda", "cuda:N"), read in one place; no imports at its top (the runner
has no torch)."""
from __future__ import annotations


def is_gpu(device: str) -> bool:
    """Whether `device` names a CUDA GPU ("cuda", "cuda:1")."""
    return device.startswith("cuda")


def gpu_index(device: str) -> int:
    """The CUDA index of a GPU device (that of "cuda" is 0)."""
    return int(device.partition(":")[2] or 0)


def torch_device(device: str):
    """The device as an indexed torch.device (set_device and NVML need an index)."""
    import torch

    parsed = torch.device(device)
    if parsed.type == "cuda" and parsed.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return parsed
