"""The harness's own GPU memory for one pair, in multiples of the problem's inputs I, output O and weights W
(problem_info.Sizes), and the room it keeps for the candidate: the budget, the pre-flight need (PairMemory.check)
and the out-of-memory rule (PairMemory.blame). Why: docs/memory.md, docs/decisions/memory-budget.md."""
from __future__ import annotations

import re

from harness.common.problem_info import Sizes, gib

OUT_OF_MEMORY = re.compile(r"OutOfMemoryError|out of memory", re.I)  # an error message that is one

SLACK = 2**30  # allocator rounding, cuBLAS and cuDNN workspaces: once per pair, once for the candidate
# A pair needing more of the GPU than this keeps the judges ahead off CUDA: docs/decisions/memory-budget.md
CROWDED_SHARE = 0.5


def stages(size: Sizes) -> dict:
    """{stage: {process: bytes}}: each process's peak in each stage (docs/memory.md's table)."""
    i, o, w = size.inputs, size.outputs, size.weights
    return {"correctness": {"judge": 2 * i + 2 * o + 3 * w, "reference worker": w, "candidate's worker": 0},
            "timing": {"judge": max(3 * i, 2 * i + o) + 3 * w, "reference worker": reference_worker_need(size),
                       "candidate's worker": i}}


def judge(size: Sizes) -> int:
    return max(stage["judge"] for stage in stages(size).values())


def candidate_share(size: Sizes) -> int:
    """The harness's share of the candidate's worker (its timing inputs): never counted against it."""
    return max(stage["candidate's worker"] for stage in stages(size).values())


def harness(size: Sizes) -> int:
    """The whole harness's memory for the pair at its peak stage, with the slack."""
    return max(sum(stage.values()) for stage in stages(size).values()) + SLACK


def least(size: Sizes) -> int:
    """What the harness cannot do without when the device is short (the float64 truth and timing caches give way)."""
    return (2 * size.inputs + size.outputs + size.weights) + reference_worker_need(size) + size.inputs + SLACK


def reference_worker_need(size: Sizes) -> int:
    return size.inputs + size.outputs + size.weights


def candidate_room(size: Sizes) -> int:
    """What a candidate of the reference's size holds of its own: its output and weights, plus the slack."""
    return size.outputs + size.weights + SLACK


def candidate_allowance(size: Sizes, reference_call: int = 0) -> int:
    """What a candidate may hold before an out-of-memory is its doing: twice a reference-sized call, plus the slack."""
    return 2 * (size.inputs + size.weights + max(size.outputs, reference_call)) + SLACK


def candidates_own(size: Sizes, held: int, reference_call: int = 0) -> tuple[int, int, bool]:
    """Of what the candidate's worker `held`: (its own bytes, its allowance, whether the shortage is its doing)."""
    own, allowance = held - candidate_share(size), candidate_allowance(size, reference_call)
    return own, allowance, own > allowance


def pair_need(size: Sizes) -> tuple[int, str]:
    """(bytes a GPU pair needs free before it starts, how that was reckoned): problem_info.memory_shortfall's `need`."""
    return least(size) + candidate_room(size), (
        f"the harness's {gib(least(size))} at the least (its budget {gib(harness(size))}) and room for a candidate of "
        f"the reference's size, {gib(candidate_room(size))}: harness/judge/footprint.py")


def crowds_the_gpu(need: int, device_total: int) -> bool:
    """Whether a pair needing `need` bytes (pair_need) crowds a GPU of `device_total` bytes."""
    return need > CROWDED_SHARE * device_total
