"""Verdict attack: tries to read the run's secret (which seeds the trial inputs) from its judge and runner.
The job travels through a pipe, and both processes are non-dumpable: their memory, environment and file
descriptors are closed to this user's other processes. Any success here is an error the test sees."""
import os

import torch
import torch.nn as nn

leaks = []
pid = os.getppid()
for _ in range(2):  # the judge, then the runner

    for name in ("mem", "environ", "fd/0"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                f.read(1)
            leaks.append(f"/proc/{pid}/{name}")
        except OSError:
            pass
    with open(f"/proc/{pid}/stat") as f:
        pid = int(f.read().rsplit(")", 1)[1].split()[1])
    if "secret" in open(f"/proc/{os.getppid()}/cmdline", "rb").read().decode(errors="replace"):
        leaks.append("cmdline")
    if pid <= 1:
        break


class ModelNew(nn.Module):
    def forward(self, x):
        if leaks:
            raise RuntimeError(f"could read {leaks}")
        return torch.relu(x)
