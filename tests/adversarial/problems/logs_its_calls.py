"""A reference that records when it runs: each forward appends its CLOCK_MONOTONIC start and end to
$HARNESS_TEST_CALL_LOG (one file per process). tests/adversarial/test_isolation.py uses it to check that no
candidate process ran during any reference call, in the judge or in the reference's timing worker."""
import os
import time

import torch
import torch.nn as nn

batch_size = 64
dim = 4096


class Model(nn.Module):
    def forward(self, x):
        start = time.monotonic_ns()
        out = torch.relu(x)
        end = time.monotonic_ns()
        path = os.environ.get("HARNESS_TEST_CALL_LOG")
        if path:
            with open(f"{path}.{os.getpid()}", "a") as log:
                log.write(f"{start} {end}\n")
        return out


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
