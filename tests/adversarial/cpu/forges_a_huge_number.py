"""Verdict attack: its worker's timing reply carries a batch of 10**5000 calls, an integer Python cannot print. It
reached the judge's record, which the judge then could not write: the judge died, a harness_error, and the candidate
had no verdict. A reply with an integer wider than 63 bits is malformed now: crash."""
import sys

import torch
import torch.nn as nn

Worker = sys.modules["harness.worker.worker"].Worker
honest_prepare = Worker.op_prepare_timing


def forged_prepare(self, *args, **kwargs):
    reply = honest_prepare(self, *args, **kwargs)
    if reply[0] == "ok":
        reply[1]["batch"] = 10**5000
    return reply


Worker.op_prepare_timing = forged_prepare


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
