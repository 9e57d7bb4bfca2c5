"""Semantic attack (red team): in timed calls (private timing inputs, where trial inputs arrive in shared memory) it
writes its output over its input and returns the input: no output to allocate, and right, since every round refills
the inputs. No trial call returned its input, so the timed calls were not the checked calls: incorrect,
wrong_timed_output. (Read on the CPU's copy of the output, the aliasing was never seen: correct at 1.11x before.)"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        if not x.is_shared():
            return x.relu_()
        return torch.relu(x)
