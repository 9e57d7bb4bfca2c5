"""Tensors that cross to another process: where they are allocated and the wait that makes them safe to read. CUDA
IPC maps a whole allocator segment, so each peer gets a pool of its own (docs/decisions/handover.md)."""
from __future__ import annotations

import contextlib

import torch


class Outbox:
    """The memory pool of the tensors sent to one peer."""

    def __init__(self, device: torch.device):
        self.device = device
        self.pool = new_pool(device) if device.type == "cuda" else None

    def copy(self, x):
        """A copy for the peer to map."""
        if not isinstance(x, torch.Tensor) or not x.is_cuda:
            return copy(x)
        with self.allocating():
            return copy(x)

    def allocating(self):
        """A context allocating new GPU tensors in the outbox."""
        if self.pool is None:
            return contextlib.nullcontext()
        return torch.cuda.use_mem_pool(self.pool, device=self.device)

    def copies(self, values) -> list:
        """Copies of a list's or tuple's tensors, of the same kind."""
        if type(values) in (list, tuple):
            return type(values)(self.copy(x) for x in values)
        return [self.copy(x) for x in values]

    def release(self) -> None:
        """Start a new pool: a live pool never hands its free blocks back."""
        if self.pool is not None:
            self.pool = new_pool(self.device)

    def state_copy(self, state: dict) -> dict:
        """A state_dict's copy for the peer to load."""
        return {name: self.copy(tensor) for name, tensor in state.items()}


def new_pool(device: torch.device):
    """A MemPool made with `device` current (one made elsewhere breaks): docs/decisions/handover.md."""
    with torch.cuda.device(device):
        return torch.cuda.MemPool()


def copy(x):
    """A tensor's copy to send (a worker's own outputs)."""
    return x.detach().clone() if isinstance(x, torch.Tensor) else x


def ready(device: torch.device) -> None:
    """Finish our GPU work before a peer reads it: a reused IPC mapping does not wait
    (docs/decisions/handover.md)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
