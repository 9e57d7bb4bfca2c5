"""Sabotage by memory: after its correctness calls, the candidate takes every free byte of the GPU and keeps it,
so the reference's side (the judge, the reference's worker) runs out of memory. The verdict must name the
candidate (runtime_error, with the memory its worker held), never blame the reference."""
import torch
import torch.nn as nn

kept, calls = [], [0]


def take_everything():
    chunk = 1 << 30
    while chunk >= 1 << 20:
        try:
            kept.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError:
            chunk //= 2


class ModelNew(nn.Module):
    def forward(self, x):
        calls[0] += 1
        if calls[0] == 5:  # trials 1-3 and the determinism rerun are done: timing is next
            take_everything()
        return torch.relu(x)
