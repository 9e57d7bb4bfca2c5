"""Fault: leaves a non-daemon thread running forever; the output is right, the run must not hang."""
import threading
import time

import torch
import torch.nn as nn


def forever():
    while True:
        time.sleep(1)


threading.Thread(target=forever, daemon=False).start()


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
