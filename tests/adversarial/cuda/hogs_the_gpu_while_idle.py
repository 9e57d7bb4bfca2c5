"""Isolation attack (issue 15, item 1): computes the reference's own op, and a thread of its own launches matmuls
on a stream of its own whenever the candidate has not been called for 5 ms, that is while the reference is timed
in its worker. It came out correct at 1.28x on the full-size sigmoid on the H100 (as torch.sigmoid) before the sides were isolated.
Now the thread is stopped between the candidate's own requests, and work it queued is drained before a window."""
import threading
import time

import torch
import torch.nn as nn

last_call = [time.monotonic()]


def hog() -> None:
    stream = torch.cuda.Stream()
    a = torch.randn(4096, 4096, device="cuda")
    while True:
        if time.monotonic() - last_call[0] > 0.005:
            with torch.cuda.stream(stream):
                for _ in range(4):
                    a @ a
        time.sleep(0.0005)


threading.Thread(target=hog, daemon=True).start()


class ModelNew(nn.Module):
    def forward(self, x):
        last_call[0] = time.monotonic()
        return torch.relu(x)
