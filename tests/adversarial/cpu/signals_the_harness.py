"""Isolation attack: signals, traces and reads every harness process it can find: its judge (parent), the runner
(grandparent), the reference's worker (its sibling), and every process of this user at once (kill -1). Each
signal is a SIGSTOP followed at once by a SIGCONT, so a success does no lasting harm; any success, and any
/proc file of theirs it can read (mem, environ), ends the pair as this candidate's runtime_error. The candidate's
worker has no capabilities and a seccomp filter: every attempt must fail, and the pair is correct."""
import ctypes
import os
import signal

import torch
import torch.nn as nn


def harness_processes() -> dict:
    judge = os.getppid()
    with open(f"/proc/{judge}/stat") as f:
        runner = int(f.read().rsplit(")", 1)[1].split()[1])
    found = {"judge": judge, "runner": runner}
    for task in os.listdir(f"/proc/{judge}/task"):
        with open(f"/proc/{judge}/task/{task}/children") as f:
            for pid in map(int, f.read().split()):
                if pid != os.getpid():
                    found[f"sibling {pid}"] = pid
    return found


def attacks() -> list:
    got = []
    libc = ctypes.CDLL(None, use_errno=True)
    for name, pid in harness_processes().items():
        for sig in (signal.SIGSTOP, signal.SIGCONT):
            try:
                os.kill(pid, sig)
                got.append(f"signal {sig.name} to the {name}")
            except OSError:
                pass
        if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
            got.append(f"ptrace of the {name}")
            libc.ptrace(17, pid, 0, 0)  # PTRACE_DETACH
        for part in ("mem", "environ"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as f:
                    f.read(1)
                got.append(f"/proc/{pid}/{part} of the {name}")
            except OSError:
                pass
    try:
        os.kill(-1, signal.SIGCONT)  # every process this user may signal
        got.append("kill(-1)")
    except OSError:
        pass
    return got


class ModelNew(nn.Module):
    def forward(self, x):
        got = attacks()
        if got:
            raise RuntimeError("could reach the harness: " + "; ".join(got))
        return torch.relu(x)
