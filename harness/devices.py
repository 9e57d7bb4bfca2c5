"""A device as a run names it ("cpu", "cuda", "cuda:N"): the one place its string is read. Imports nothing (the runner,
the judge and the workers all use it). environment.resolve_device turns what the user asked for into one of these."""
from __future__ import annotations


def is_gpu(device: str) -> bool:
    """Whether `device` names a CUDA GPU ("cuda", "cuda:1")."""
    return device.startswith("cuda")


def gpu_index(device: str) -> int:
    """The CUDA index of a GPU device (that of "cuda" is 0)."""
    return int(device.partition(":")[2] or 0)
