"""Fault: starts a child process in a session of its own (out of the worker's process group) and leaves it."""
import subprocess

import torch
import torch.nn as nn

# The marker argument lets the test look for the orphan afterwards.
subprocess.Popen(["sleep", "4242.4242"], start_new_session=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
