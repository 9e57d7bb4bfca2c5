"""Seeded inputs, born on the target device: the problem's own distribution, then a wider one."""
from __future__ import annotations

import hashlib
from typing import Optional

import torch


class ProblemError(Exception):
    """The problem file itself misbehaves (missing functions, wrong return types)."""


def trial_seed(secret: int, problem: str, trial: int) -> int:
    """A seed the candidate cannot predict: derived from the run's secret, not from a public constant."""
    digest = hashlib.sha256(f"{secret}:{problem}:{trial}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def indexed(device: torch.device) -> torch.device:
    """cuda -> cuda:N (the current GPU): torch.cuda.set_device and NVML need an index."""
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device


def to_device(x, device: torch.device):
    """Move tensors to the device; leave other values alone."""
    return x.to(device) if isinstance(x, torch.Tensor) else x


def make_inputs(module, seed: int, device: torch.device, wide_scale: Optional[float] = None,
                dtype: Optional[torch.dtype] = None) -> list:
    """get_inputs() under a seed with `device` as the default device; wide_scale redraws float tensors;
    dtype (--precision) casts them."""
    torch.manual_seed(seed)
    with torch.device(device):
        raw = module.get_inputs()
        if not isinstance(raw, (list, tuple)):
            raise ProblemError(f"get_inputs() returned {type(raw).__name__}, expected a list")
        inputs = [to_device(x, device) for x in raw]
        if wide_scale is not None:
            inputs = [widen(x, wide_scale) for x in inputs]
        if dtype is not None:
            inputs = [x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
    return inputs


def widen(x, scale: float):
    """Redraw a float tensor, in place, from a normal distribution of std `scale`: far outside [0, 1)."""
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.normal_(0.0, scale)  # in place: no second copy of a multi-GB input
    return x


def init_inputs(module) -> list:
    """The constructor arguments from get_init_inputs()."""
    raw = module.get_init_inputs()
    if not isinstance(raw, (list, tuple)):
        raise ProblemError(f"get_init_inputs() returned {type(raw).__name__}, expected a list")
    return list(raw)


def nbytes(values) -> int:
    """Bytes of every tensor in a (possibly nested) list or tuple."""
    if isinstance(values, torch.Tensor):
        return values.numel() * values.element_size()
    if isinstance(values, (list, tuple)):
        return sum(nbytes(v) for v in values)
    if isinstance(values, dict):
        return sum(nbytes(v) for v in values.values())
    return 0
