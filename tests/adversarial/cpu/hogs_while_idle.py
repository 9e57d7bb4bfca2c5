"""Isolation attack (issue 15, item 1, on the CPU): computes the reference's own op and keeps the host busy while
it is not called (that is, while the reference is timed): a thread of its own and a child process in a session
of its own spin on the CPU. Both are stopped with the rest of the candidate's side between its requests.
With HARNESS_TEST_HOG_LOG set, each spinner appends the CLOCK_MONOTONIC times at which it ran to that file
(.thread, .child): tests/adversarial/test_isolation.py checks that none falls inside a reference call."""
import os
import threading
import time

import torch
import torch.nn as nn

LOG = os.environ.get("HARNESS_TEST_HOG_LOG")


def spin(log_path) -> None:
    log = open(log_path, "a", buffering=1) if log_path else None
    last_flush = time.monotonic_ns()
    stamps = []
    while True:
        x = 0
        for i in range(20000):  # a few hundred microseconds of Python
            x += i * i
        now = time.monotonic_ns()
        stamps.append(now)
        if log and now - last_flush > 5_000_000:
            log.write("\n".join(map(str, stamps)) + "\n")
            stamps, last_flush = [], now


def start_child() -> None:
    if os.fork() == 0:
        os.setsid()  # a session of its own: out of the worker's process group
        if os.fork() == 0:  # and orphaned: its parent is gone at once
            spin(LOG + ".child" if LOG else None)
        os._exit(0)


start_child()
threading.Thread(target=spin, args=(LOG + ".thread" if LOG else None,), daemon=True).start()


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
