"""Verdict attack: looks through the garbage collector and the stack for the reference's output to return.
The reference never runs in the worker, so there is nothing to find; what it returns is wrong."""
import gc
import inspect

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        frames = [f.frame.f_locals for f in inspect.stack()]
        candidates = [o for o in gc.get_objects() if isinstance(o, torch.Tensor) and o.shape == x.shape
                      and o.data_ptr() != x.data_ptr()]
        for scope in frames:
            for value in scope.values():
                if isinstance(value, torch.Tensor) and value.shape == x.shape and value.data_ptr() != x.data_ptr():
                    candidates.append(value)
        return candidates[-1].clone() if candidates else torch.zeros_like(x)
