"""What each phase of a pair (correctness, timing set-up, timing) works with, made once by its judge: a phase reads
this, never the judge, and keeps its findings in its report (reports.py); notes and phase times reach the Result."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ContextManager

import torch

from harness.common.config import Config
from harness.common.protocol import PairJob
from harness.common.records import Result
from harness.judge.reference import Reference
from harness.judge.workers import PairWorkers


@dataclass(frozen=True)
class PairContext:
    """One pair's job, this block's settings, its device and Result, the reference side and both workers."""

    job: PairJob
    cfg: Config  # this block's (a confirmation block's: fewer trials and rounds)
    device: torch.device
    result: Result
    reference: Reference
    workers: PairWorkers
    phase: Callable[[str], ContextManager]  # times a phase of the pair; a top-level one is a stage
    note: Callable[[str], None]  # a note for the Result, once
    gated: bool = False  # the runner says when to time (protocol.Go): judges ahead may be starting CUDA
    worker_threads: int = 1  # the CPU threads the workers compute with

    @property
    def memory(self):
        """The pair's memory accounting (PairMemory, sized when the problem loads)."""
        return self.reference.memory
