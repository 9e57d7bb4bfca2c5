"""Check attack (red team): timed calls return zeros, no work; the worker's answer to the judge's request for the
last timed output is patched to compute the right one then, from the timing inputs. The `time` reply fingerprinted
the zeros, so the output sent for the check is not what the timed call returned: incorrect, wrong_timed_output.
(Before fingerprints, a matmul version came out correct at 5.1x.)"""
import sys

import torch
import torch.nn as nn

Worker = sys.modules["harness.worker"].Worker
TIMED = {"now": False}
timed_call, last_timed_output = Worker.call_for_timing, Worker.op_last_timed_output


def flag_timed_calls(self):
    TIMED["now"] = True
    try:
        return timed_call(self)
    finally:
        TIMED["now"] = False


def put_right(self):
    self.timer.last_output = torch.relu(*self.timing_inputs)  # the right output, made only when asked for it
    return last_timed_output(self)


Worker.call_for_timing, Worker.op_last_timed_output = flag_timed_calls, put_right


class ModelNew(nn.Module):
    def forward(self, x):
        if TIMED["now"]:
            return torch.zeros_like(x)
        return torch.relu(x)
