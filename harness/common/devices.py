"""A device as a run names it ("cpu", "cuda", "cuda:N"), read in one place; no imports at its top (the runner
has no torch)."""
from __future__ import annotations

import os


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


def only_this_gpu(device: str | None) -> dict:
    """The environment that shows a process this GPU alone, as cuda:0 ({} for the CPU, or when it cannot tell).

    A process that sees every GPU starts CUDA on each: a judge's start-up then slows the pairs on the others
    (docs/decisions/one-gpu-each.md)."""
    if device is None or not is_gpu(device):
        return {}
    ids = visible_gpus()
    if ids is None:
        return {"CUDA_VISIBLE_DEVICES": str(gpu_index(device))}
    return {"CUDA_VISIBLE_DEVICES": ids[gpu_index(device)]} if gpu_index(device) < len(ids) else {}


def visible_gpus() -> list[str] | None:
    """CUDA_VISIBLE_DEVICES's entries (indexes or UUIDs), torch's cuda:0 first; None when it is unset."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return None if visible is None else [part.strip() for part in visible.split(",") if part.strip()]


def as_seen_alone(device: str | None) -> str | None:
    """The name a process given only_this_gpu(device) knows the device by."""
    return "cuda:0" if only_this_gpu(device) else device
