"""Sabotage by memory: at its last correctness call the candidate takes every free byte of the GPU and keeps it,
so the reference's worker, which has allocated next to nothing yet, runs out of memory when it copies its timing
inputs. The verdict must name the candidate (runtime_error, with the memory its worker held), never blame the
reference. (Taken later, when every process of the reference's side has cached blocks, nobody runs out.)"""
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
        if calls[0] == 4:  # trial 1, its determinism rerun, trial 2, and now trial 3 (adversarial.yaml): timing next
            take_everything()
        return torch.relu(x)
