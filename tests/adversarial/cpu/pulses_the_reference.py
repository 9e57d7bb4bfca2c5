"""Isolation attack (issue 15, item 2): computes the reference's own op and, whenever it has not been called for
5 ms (the reference is being timed), sends SIGSTOP/SIGCONT pulses to its sibling, the reference's worker, found
through its judge's children; errors are ignored, as a real saboteur would. On the CPU it came out 1.53x before
the workers were isolated. Now its signals fail (seccomp) and its thread is stopped between its own requests."""
import os
import signal
import threading
import time

import torch
import torch.nn as nn

last_call = [time.monotonic()]


def siblings() -> list:
    judge, found = os.getppid(), []
    for task in os.listdir(f"/proc/{judge}/task"):
        with open(f"/proc/{judge}/task/{task}/children") as f:
            found += [int(p) for p in f.read().split() if int(p) != os.getpid()]
    return found


def pulse() -> None:
    while True:
        if time.monotonic() - last_call[0] > 0.005:
            for pid in siblings():
                try:
                    os.kill(pid, signal.SIGSTOP)
                    time.sleep(0.002)
                    os.kill(pid, signal.SIGCONT)
                except OSError:
                    pass
        time.sleep(0.001)


threading.Thread(target=pulse, daemon=True).start()


class ModelNew(nn.Module):
    def forward(self, x):
        last_call[0] = time.monotonic()
        return torch.relu(x)
