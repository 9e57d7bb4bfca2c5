"""Isolation attack (issue 15, item 1, a variant): computes the reference's own op and starts a child process,
in a session of its own, that runs matmuls on the GPU without pause. The child is part of the candidate's side:
it is stopped between the candidate's requests, and its queued work drained before any window opens."""
import subprocess
import sys

import torch
import torch.nn as nn

HOG = "import torch\na = torch.randn(4096, 4096, device='cuda')\nwhile True:\n    a @ a\n    torch.cuda.synchronize()\n"
child = subprocess.Popen([sys.executable, "-c", HOG], start_new_session=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
