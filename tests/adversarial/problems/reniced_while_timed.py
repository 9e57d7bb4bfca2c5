"""A reference that lowers its own priority (nice +5) at its 8th call in a process: in the reference's timing worker
(at least one call a round), and in the judge (no harm there). It stands in for a candidate that reschedules the reference's
worker where the seccomp filter is missing (tests/adversarial/test_isolation.py): the judge must void the timing."""
import os

import torch
import torch.nn as nn

batch_size = 16
dim = 256
calls = [0]


class Model(nn.Module):
    def forward(self, x):
        calls[0] += 1
        if calls[0] == 8:
            os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0) + 5)
        return torch.relu(x)


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
