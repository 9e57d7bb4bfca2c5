"""Isolation attack: computes the reference's own op, and now and then reschedules its sibling, the reference's
worker (found through its judge's children), without signalling or reading it: every thread of it pinned to one
CPU, niced to 19 and put in SCHED_IDLE. Run as a user without root on the 2-core CPU (the gemm+sigmoid problem at
128x1024x1024), such a candidate came out 1.67x [1.62, 1.71] before the seccomp filter refused these calls; as root,
the kernel refuses them for want of capabilities. Errors are ignored, as a real saboteur would."""
import os

import torch
import torch.nn as nn

calls = [0]


def siblings() -> list:
    judge, found = os.getppid(), []
    for task in os.listdir(f"/proc/{judge}/task"):
        with open(f"/proc/{judge}/task/{task}/children") as f:
            found += [int(p) for p in f.read().split() if int(p) != os.getpid()]
    return found


def slow_down(pid: int) -> None:
    for tid in os.listdir(f"/proc/{pid}/task"):
        for act in (lambda t: os.sched_setaffinity(t, {min(os.sched_getaffinity(0))}),
                    lambda t: os.setpriority(os.PRIO_PROCESS, t, 19),
                    lambda t: os.sched_setscheduler(t, os.SCHED_IDLE, os.sched_param(0))):
            try:
                act(int(tid))
            except OSError:
                pass


class ModelNew(nn.Module):
    def forward(self, x):
        calls[0] += 1
        if calls[0] % 50 == 1:  # not on every call: its own time would pay for it
            for pid in siblings():
                try:
                    slow_down(pid)
                except OSError:
                    pass
        return torch.relu(x)
