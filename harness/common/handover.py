"""Tensors that cross to another process: the one place they are allocated, and the wait that makes them
safe to read.

A peer maps a tensor's whole allocation: on the CPU a shared-memory file of its own, but on a GPU CUDA IPC maps
the caching allocator's whole segment (2 MiB for small tensors), which also holds whatever else was allocated
there (seen on the H100: a candidate that scanned the segment of its input found the judge's reference output
for that trial in it, whole). So what the judge sends a worker is copied into an Outbox of that worker's own, a
memory pool that holds nothing else: a worker's mappings show only what it was given.
"""
from __future__ import annotations

import contextlib

import torch


class Outbox:
    """Allocations for the tensors sent to one peer: a GPU memory pool of that peer's alone."""

    def __init__(self, device: torch.device):
        self.device = device
        self.pool = new_pool(device) if device.type == "cuda" else None

    def copy(self, x):
        """A tensor's copy for the peer to map (anything else as it is)."""
        if not isinstance(x, torch.Tensor) or not x.is_cuda:
            return copy(x)
        with self.allocating():
            return copy(x)

    def allocating(self):
        """A context in which this thread's new GPU tensors are allocated in the outbox (a no-op on the CPU)."""
        if self.pool is None:
            return contextlib.nullcontext()
        return torch.cuda.use_mem_pool(self.pool, device=self.device)

    def copies(self, values) -> list:
        """Copies of the tensors in a list or tuple (other values as they are), of the same kind."""
        if type(values) in (list, tuple):
            return type(values)(self.copy(x) for x in values)
        return [self.copy(x) for x in values]

    def release(self) -> None:
        """Let the GPU memory of what was sent before go back to the device once the peer lets go of it: a live
        pool keeps its free blocks for itself (torch.cuda.empty_cache frees a pool's segments only once the pool
        is gone), which held tens of GB on the H100. The next copy starts a new pool."""
        if self.pool is not None:
            self.pool = new_pool(self.device)

    def state_copy(self, state: dict) -> dict:
        """A model's state_dict, copied for the peer to load (ours stays private)."""
        return {name: self.copy(tensor) for name, tensor in state.items()}


def new_pool(device: torch.device):
    """A memory pool on `device`. A MemPool belongs to the device current when it is made: one made on another
    device is dropped after its first use on ours, and the next use fails an assertion in PyTorch's allocator
    (seen on the second GPU of an H200 machine: every pair on cuda:1 a harness_error)."""
    with torch.cuda.device(device):
        return torch.cuda.MemPool()


def copy(x):
    """A tensor's copy to send (the worker's own outputs: its memory is its own to show)."""
    return x.detach().clone() if isinstance(x, torch.Tensor) else x


def ready(device: torch.device) -> None:
    """Finish our queued GPU work before a peer reads tensors we send it: a process that maps a storage it has
    mapped before reuses the mapping and does not wait for our writes to it (seen on the H100: the determinism
    rerun read half-restored 6.4 GB inputs and was flagged nondeterministic)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
