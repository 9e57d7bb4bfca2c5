"""The harness's own start-up work on a GPU kept out of that GPU's timing windows.

Judges started ahead of their pairs (and their workers) start CUDA and the profiler while the pair before them
runs: on the H100 that work, in other processes, fell inside the running pair's windows, and the GPU probe
rightly dropped those rounds (3 of 20 honest A/A pairs of one run were flagged `interference`). So a judge holds
its GPU's lock while it times, and a start-up takes the lock before it touches the GPU. A lock file per GPU
(flock) serves every run of this machine's user. It is never waited on for long: a process that holds it for
ever (a candidate can open the file too) delays the others by `wait_s`, and the GPU probe still guards the
windows.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
import time

POLL_S = 0.01
START_WAIT_S = 60.0  # a start-up waits at most this long for the pair being timed on its GPU
TIMING_WAIT_S = 30.0  # a judge waits at most this long for start-ups before it times


def lock_path(device: str) -> str:
    """The lock file of one GPU, as this process's CUDA_VISIBLE_DEVICES and the device's index name it."""
    index = device.split(":", 1)[1] if ":" in device else "0"
    key = hashlib.sha256(f"{os.environ.get('CUDA_VISIBLE_DEVICES', '')}|{index}".encode()).hexdigest()[:12]
    return os.path.join(tempfile.gettempdir(), f"harness-gpu-{key}.lock")


@contextlib.contextmanager
def exclusive(device: str, wait_s: float):
    """Hold the GPU's lock for the block, waiting at most wait_s for it; yields whether it is held (when not,
    the block runs all the same)."""
    fd = os.open(lock_path(device), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    held = False
                    break
                time.sleep(POLL_S)
        yield held
    finally:
        os.close(fd)  # and with it the lock
