"""A judge's GPU memory for its pair: the pre-flight check, the reference call's peak, and whose an out-of-memory is
(docs/memory.md)."""
from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import torch

from harness.common import clocks, protocol, problem_info
from harness.judge import footprint
from harness.judge.footprint import OUT_OF_MEMORY
from harness.common.problem_info import free_memory, gib, total_memory
from harness.common.verdict import Status, Verdict

# A folder for each judge's GPU memory history (bench/memory_footprint.py).
MEMORY_HISTORY = "HARNESS_MEMORY_HISTORY"
UNITS = {"B": 1, "bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
# Lenient: the candidate's worker paid its first-use costs in the trials.
ROOM_SLACK = 256 << 20


class PairMemory:
    """One pair's sizes (None if unsized), a reference call's peak, the judge's peak."""

    def __init__(self, device: torch.device, problem_source: str, overrides: dict, sizes):
        self.device, self.problem_source, self.overrides, self.sizes = device, problem_source, overrides, sizes
        self.reference_call_peak = 0  # bytes beyond its inputs and weights
        self.peak_reserved = 0  # before measured_call reset torch's

    def check(self, report=None) -> None:
        """Skip a pair the device cannot hold; on a GPU tell the runner its need."""
        gpu = self.device.type == "cuda"
        need = footprint.pair_need if gpu else problem_info.host_need
        shortfall = problem_info.memory_shortfall(self.sizes, self.problem_source, self.overrides,
                                                  free_memory(self.device), need)
        if shortfall:
            raise Verdict(Status.SKIPPED, shortfall)
        if gpu and self.sizes is not None and report is not None:
            needed, total = need(self.sizes)[0], total_memory(self.device)
            report.send(protocol.Footprint(needed >> 20, total >> 20, footprint.crowds_the_gpu(needed, total)))

    @contextlib.contextmanager
    def measured_call(self):
        """Measure a reference call's peak GPU memory (its workspaces too)."""
        if self.device.type != "cuda":
            yield
            return
        self.peak_reserved = max(self.peak_reserved, torch.cuda.max_memory_reserved(self.device))
        torch.cuda.reset_peak_memory_stats(self.device)
        before = torch.cuda.memory_allocated(self.device)
        try:
            yield
        finally:
            peak = torch.cuda.max_memory_allocated(self.device) - before
            self.reference_call_peak = max(self.reference_call_peak, peak)

    @contextlib.contextmanager
    def left_out_of_peak(self):
        """Leave what runs inside out of this process's reported peak."""
        if self.device.type != "cuda":
            yield
            return
        self.peak_reserved = max(self.peak_reserved, torch.cuda.max_memory_reserved(self.device))
        try:
            yield
        finally:
            torch.cuda.reset_peak_memory_stats(self.device)

    def check_room_alike(self, free_before: int, free_after: int) -> None:
        """Skip unless the candidate has the room the reference's warm-up took."""
        taken = free_before - free_after
        if free_after + ROOM_SLACK < taken:
            raise Verdict(Status.SKIPPED, f"the reference's timing warm-up took {gib(taken)} of the GPU and left "
                                          f"{gib(free_after)} for the candidate's: on this device the two sides cannot "
                                          f"be timed alike (a convolution runs a slower algorithm where its workspace "
                                          "does not fit); "
                                          + problem_info.shrink_hint(self.problem_source, self.overrides))

    def worker_out_of_memory(self, message: str) -> Verdict:
        """The candidate's out-of-memory: runtime_error over its allowance, else skipped."""
        demand = oom_demand(message)
        if demand is None or self.sizes is None:  # as raised
            return Verdict(Status.RUNTIME_ERROR, message)
        own, allowance, its_doing = footprint.candidates_own(self.sizes, demand, self.reference_call_peak)
        if its_doing:
            return Verdict(Status.RUNTIME_ERROR, f"it held and asked for {gib(own)} of its own, over its allowance of "
                                                 f"{gib(allowance)}: {message}")
        return self.too_small(f"it held and asked for {gib(own)} of its own, within its allowance of {gib(allowance)}: "
                              f"the GPU had no room for it beside the harness", message)

    def blame(self, message: str, candidate_pid: int, reference_pid: int) -> Verdict | None:
        """The verdict when the judge or the reference's worker ran out of GPU memory; None if it is no GPU OOM."""
        if self.device.type != "cuda" or not OUT_OF_MEMORY.search(message):
            return None
        held = clocks.gpu_memory_of_groups(self.device.index or 0, [candidate_pid, reference_pid])
        if held is None or self.sizes is None:  # no per-process figures from NVML, or no sizes
            return self.too_small("the candidate's share of the GPU could not be measured, so it is not blamed",
                                  message)
        candidate, reference = held
        own, allowance, its_doing = footprint.candidates_own(self.sizes, candidate, self.reference_call_peak)
        figures = (f"the candidate's worker held {gib(candidate)} ({gib(own)} its own; allowance {gib(allowance)}), "
                   f"the reference's {gib(reference)}, this judge {gib(reserved_here(self.device))}")
        if its_doing:
            return Verdict(Status.RUNTIME_ERROR, f"{figures} when the harness ran out of GPU memory: {message}")
        return self.too_small(figures, message)

    def too_small(self, figures: str, message: str) -> Verdict:
        """Skipped, figures first (torch's message can run past a record's 500 characters)."""
        return Verdict(Status.SKIPPED, f"the GPU ran out of memory, not by the candidate's doing ({figures}); "
                                       f"{problem_info.shrink_hint(self.problem_source, self.overrides)}; {message}")


def oom_demand(message: str):
    """Bytes held plus asked for, from torch's OOM message, or None."""
    tried = re.search(r"Tried to allocate ([\d.]+) (B|bytes|KiB|MiB|GiB|TiB)", message)
    held = re.search(r"([\d.]+) (B|bytes|KiB|MiB|GiB|TiB) is allocated by PyTorch", message)
    if not tried or not held:
        return None
    return int(float(tried[1]) * UNITS[tried[2]] + float(held[1]) * UNITS[held[2]])


def reserved_here(device: torch.device) -> int:
    """GPU memory this process's allocator holds."""
    return torch.cuda.memory_reserved(device) if torch.cuda.is_initialized() else 0


def release_cached_memory(device: torch.device, outboxes=()) -> None:
    """Hand cached GPU blocks (and the outboxes') back for the workers."""
    if device.type != "cuda":
        return
    for outbox in outboxes:
        outbox.release()
    torch.cuda.ipc_collect()  # blocks workers let go of
    torch.cuda.empty_cache()


def record_memory_history(device: torch.device) -> None:
    """With HARNESS_MEMORY_HISTORY set, record GPU allocations (slow)."""
    if os.environ.get(MEMORY_HISTORY) and device.type == "cuda":
        torch.cuda.memory._record_memory_history(max_entries=1_000_000)


def dump_memory_history(device: torch.device, name: str) -> None:
    """The history to HARNESS_MEMORY_HISTORY/<name>.pickle."""
    folder = os.environ.get(MEMORY_HISTORY)
    if folder and device.type == "cuda":
        Path(folder).mkdir(parents=True, exist_ok=True)
        torch.cuda.memory._dump_snapshot(str(Path(folder) / f"{name}.pickle"))
