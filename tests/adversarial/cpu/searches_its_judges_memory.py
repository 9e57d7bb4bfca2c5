"""Verdict attack: the worker is forked from its judge, so it holds a copy of the judge's memory as it was at
the fork. It searches that copy (objects, the frames under its own, stdin's buffer, inherited descriptors) for
the job, which carries the run's secret. The judge forks before it reads its job, and the worker keeps none of
its descriptors: nothing is found. Any success here is an error the test sees."""
import gc
import inspect
import os
import sys

import torch
import torch.nn as nn


NEEDLE = '"sec' + 'ret": '  # the job's key as JSON writes it, spelled so that this source does not hold it


def is_job(value) -> bool:
    """The judge's job, parsed (a dict) or as it came (JSON text)."""
    if isinstance(value, dict):
        return "secret" in value and "solution_source" in value
    if isinstance(value, bytes):
        return NEEDLE.encode() in value
    return isinstance(value, str) and NEEDLE in value


def found_in_objects() -> list:
    hits = []
    for obj in gc.get_objects():
        try:
            if is_job(obj):
                hits.append("a job dict")
        except Exception:
            pass
    for frame in inspect.stack()[1:]:
        if frame.filename != __file__ and any(is_job(v) for v in frame.frame.f_locals.values()):
            hits.append(f"frame {frame.function}")
    return hits


def found_in_descriptors() -> list:
    hits = []
    try:
        if is_job(sys.stdin.buffer.peek(1 << 16)) or is_job(sys.stdin.read()):  # what stdin buffered
            hits.append("stdin's buffer")
    except Exception:
        pass
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            blocking = os.get_blocking(fd)
            os.set_blocking(fd, False)
            try:
                if is_job(os.read(fd, 1 << 16)):
                    hits.append(f"fd {fd}")
            finally:
                os.set_blocking(fd, blocking)
        except Exception:
            pass
    return hits


leaks = found_in_objects() + found_in_descriptors()  # at import: the worker has not been sent anything yet


class ModelNew(nn.Module):
    def forward(self, x):
        if leaks:
            raise RuntimeError(f"could read the job: {leaks}")
        return torch.relu(x)
