"""Tensors that cross to another process: the one place they are allocated, and the wait that makes them
safe to read.

A peer maps a tensor's whole allocation (CUDA IPC maps the caching allocator's segment; on the CPU a
shared-memory file), so what the judge sends a worker, and what a worker sends back beyond the candidate's own
outputs, is a copy made here for that purpose and for nothing else.
"""
from __future__ import annotations

import torch


def copy(x):
    """A tensor's copy for a peer to map (anything else as it is)."""
    return x.detach().clone() if isinstance(x, torch.Tensor) else x


def copies(values) -> list:
    """Copies of the tensors in a list or tuple (other values as they are), of the same kind."""
    return type(values)(copy(x) for x in values) if type(values) in (list, tuple) else [copy(x) for x in values]


def state_copy(state: dict) -> dict:
    """A model's state_dict, copied for the workers to load (ours stays private)."""
    return {name: copy(tensor) for name, tensor in state.items()}


def ready(device: torch.device) -> None:
    """Finish our queued GPU work before a peer reads tensors we send it: a process that maps a storage it has
    mapped before reuses the mapping and does not wait for our writes to it (seen on the H100: the determinism
    rerun read half-restored 6.4 GB inputs and was flagged nondeterministic)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
