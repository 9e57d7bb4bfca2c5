"""A judge's GPU memory for its pair (the budget itself: harness/judge/footprint.py): the pre-flight check, the
reference
call's measured peak, and whose an out-of-memory is: the candidate's runtime_error only beyond its allowance, else
skipped (this device cannot judge the pair at these sizes), never the harness's error."""
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

# A folder: each judge's GPU memory history goes there (bench/memory_footprint.py).
MEMORY_HISTORY = "HARNESS_MEMORY_HISTORY"
UNITS = {"B": 1, "bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
# What the reference's timing warm-up may take beyond the room it leaves the candidate's: lenient, since the
# candidate's worker paid its first-use costs (kernels loaded, library handles) in the correctness trials.
ROOM_SLACK = 256 << 20


class PairMemory:
    """One pair's memory: its sizes (problem_info.Sizes from the meta device, None where it cannot be sized), what a
    reference call was measured to allocate, and the judge's peak before that measurement reset torch's."""

    def __init__(self, device: torch.device, problem_source: str, overrides: dict, sizes):
        self.device, self.problem_source, self.overrides, self.sizes = device, problem_source, overrides, sizes
        self.reference_call_peak = 0  # GPU bytes a reference call allocated beyond its inputs and weights
        self.peak_reserved = 0  # this process's peak before measured_call reset torch's

    def check(self, report=None) -> None:
        """A pair the device cannot hold is skipped here, in seconds, with the figures and the --set to shrink it. On
        a GPU: the harness's budget and room for the candidate (footprint.pair_need), and the runner is told what the
        pair needs (judge_protocol.Footprint); left to run, a judge out of memory would end it later, and an honest
        candidate's worker might be the one to fail. On the CPU: the host's memory (problem_info.host_need); left to
        run, the out-of-memory killer ends it a minute later (full-size sigmoid, 6 GiB a tensor, on a 23 GiB machine),
        and may take another of the user's processes first."""
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
        """A reference call's own peak GPU memory, beyond what was allocated before it (its output, temporaries and
        workspaces): the candidate's allowance counts it (a convolution's workspace can be several times its output:
        the problem's sizes alone would blame an honest candidate for it)."""
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
        """What runs inside is left out of this process's reported peak: the device's peaks, measured once per machine
        by whichever pair comes first (~5 GiB for a moment, handed back), are no cost of that pair's."""
        if self.device.type != "cuda":
            yield
            return
        self.peak_reserved = max(self.peak_reserved, torch.cuda.max_memory_reserved(self.device))
        try:
            yield
        finally:
            torch.cuda.reset_peak_memory_stats(self.device)

    def check_room_alike(self, free_before: int, free_after: int) -> None:
        """After the reference's worker warmed up for timing, which left `free_after` of the `free_before` bytes free
        on the GPU: skipped, with the figures, unless the candidate's warm-up has the room the reference's took (less
        ROOM_SLACK). Else the two sides are timed unlike: on an H100 capped to 24 GiB, KernelBench's
        64_conv_transposed_1D's reference kept its cuDNN workspace cached, the A/A candidate's worker found no room
        for one, and cuDNN ran a slower algorithm for it every call: 0.301, a correct pair and no tie (a tie at 80
        GiB)."""
        taken = free_before - free_after
        if free_after + ROOM_SLACK < taken:
            raise Verdict(Status.SKIPPED, f"the reference's timing warm-up took {gib(taken)} of the GPU and left "
                                          f"{gib(free_after)} for the candidate's: on this device the two sides cannot "
                                          f"be timed alike (a convolution runs a slower algorithm where its workspace "
                                          "does not fit); "
                                          + problem_info.shrink_hint(self.problem_source, self.overrides))

    def worker_out_of_memory(self, message: str) -> Verdict:
        """The candidate's worker's call ran out of GPU memory: its runtime_error when what it held and asked for,
        less the harness's share of its worker, exceeds its allowance (footprint.candidate_allowance, with the
        reference's measured call); within it, the device had no room for an honest candidate beside the harness:
        skipped."""
        demand = oom_demand(message)
        if demand is None or self.sizes is None:  # torch's figures or the problem's sizes missing: as it was raised
            return Verdict(Status.RUNTIME_ERROR, message)
        own, allowance, its_doing = footprint.candidates_own(self.sizes, demand, self.reference_call_peak)
        if its_doing:
            return Verdict(Status.RUNTIME_ERROR, f"it held and asked for {gib(own)} of its own, over its allowance of "
                                                 f"{gib(allowance)}: {message}")
        return self.too_small(f"it held and asked for {gib(own)} of its own, within its allowance of {gib(allowance)}: "
                              f"the GPU had no room for it beside the harness", message)

    def blame(self, message: str, candidate_pid: int, reference_pid: int) -> Verdict | None:
        """The verdict when the judge or the reference's worker ran out of GPU memory: the candidate's runtime_error
        when its worker held more of its own (beyond the harness's share there, footprint.candidate_share) than its
        allowance (footprint.candidate_allowance), else skipped (too_small), with the figures; None when the message is
        no GPU out-of-memory."""
        if self.device.type != "cuda" or not OUT_OF_MEMORY.search(message):
            return None
        held = clocks.gpu_memory_of_groups(self.device.index or 0, [candidate_pid, reference_pid])
        if held is None or self.sizes is None:  # NVML cannot say per process here, or the problem was not sized
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
        """A GPU out of memory that is not the candidate's doing: this device cannot judge the pair at these sizes
        (skipped, as the pre-flight check would have, had it known the forward's temporaries), never harness_error.
        The figures and the --set to shrink come before torch's message, whose list of every process on the GPU
        would push them past a record's 500 characters (records.one_line)."""
        return Verdict(Status.SKIPPED, f"the GPU ran out of memory, not by the candidate's doing ({figures}); "
                                       f"{problem_info.shrink_hint(self.problem_source, self.overrides)}; {message}")


def oom_demand(message: str):
    """From torch's CUDA out-of-memory message: what the failing process's PyTorch had allocated plus what it asked
    for, in bytes; None when the message lacks either figure."""
    tried = re.search(r"Tried to allocate ([\d.]+) (B|bytes|KiB|MiB|GiB|TiB)", message)
    held = re.search(r"([\d.]+) (B|bytes|KiB|MiB|GiB|TiB) is allocated by PyTorch", message)
    if not tried or not held:
        return None
    return int(float(tried[1]) * UNITS[tried[2]] + float(held[1]) * UNITS[held[2]])


def reserved_here(device: torch.device) -> int:
    """GPU memory this process's caching allocator holds (0 where CUDA is not started)."""
    return torch.cuda.memory_reserved(device) if torch.cuda.is_initialized() else 0


def release_cached_memory(device: torch.device, outboxes=()) -> None:
    """Hand this process's cached GPU blocks back, so the workers can use the memory (the workers' outboxes'
    too)."""
    if device.type != "cuda":
        return
    for outbox in outboxes:
        outbox.release()
    torch.cuda.ipc_collect()  # blocks a worker has let go of: back to their pools, which can then be freed
    torch.cuda.empty_cache()


def record_memory_history(device: torch.device) -> None:
    """With HARNESS_MEMORY_HISTORY set, record every GPU allocation of this process with its stack (slows it down)."""
    if os.environ.get(MEMORY_HISTORY) and device.type == "cuda":
        torch.cuda.memory._record_memory_history(max_entries=1_000_000)


def dump_memory_history(device: torch.device, name: str) -> None:
    """The recorded history to HARNESS_MEMORY_HISTORY/<name>.pickle (torch.cuda.memory._dump_snapshot's format)."""
    folder = os.environ.get(MEMORY_HISTORY)
    if folder and device.type == "cuda":
        Path(folder).mkdir(parents=True, exist_ok=True)
        torch.cuda.memory._dump_snapshot(str(Path(folder) / f"{name}.pickle"))
