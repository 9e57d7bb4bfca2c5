"""A device as a run names it ("cpu", "cuda", "cuda:N"): the one place its string is read, and parsed (torch_device).
Imports nothing at its top (the runner uses it without torch). environment.resolve_device turns what the user asked for
into one of these."""
from __future__ import annotations


def is_gpu(device: str) -> bool:
    """Whether `device` names a CUDA GPU ("cuda", "cuda:1")."""
    return device.startswith("cuda")


def gpu_index(device: str) -> int:
    """The CUDA index of a GPU device (that of "cuda" is 0)."""
    return int(device.partition(":")[2] or 0)


def torch_device(device: str):
    """The torch.device that the judge and the workers work on: always indexed (torch.cuda.set_device and NVML need
    an index; a bare "cuda" is the current GPU)."""
    import torch

    parsed = torch.device(device)
    if parsed.type == "cuda" and parsed.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return parsed
