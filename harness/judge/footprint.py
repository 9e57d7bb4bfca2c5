"""The harness's own GPU memory for one pair, as multiples of the problem's bytes (inputs I, the output O, weights W,
from the meta device: problem_info.Sizes), and the room a pair keeps for the candidate: the budget the README states,
the pre-flight check before a GPU pair (judge_memory.PairMemory.check), and the out-of-memory rule (PairMemory.blame).

What each process of the harness holds at its peak, every guarantee kept:
- the judge, correctness: the float64 truth is computed first in a trial, with nothing else of the trial resident
  (float64 inputs and output, 2I + 2O), and kept at float32 precision; then the trial's inputs, the reference's output,
  the stored truth and the candidate's copy of the inputs (2I + 2O). The float64 model copy: 2W, beside its own W.
- the judge, timing: a round's inputs and one copy per worker (3I, for a moment), then the two copies and the
  reference's output for a timed-output check (2I + O).
- the reference's worker: its private copy of the timing inputs and its output (I + O + W); in correctness, its first
  call on trial 1's inputs (judge.reference_worker_first_call) holds what the candidate's call will, while the
  candidate's worker holds its model alone, and hands it back before that call: the candidate's room, used in turn.
- the candidate's worker: its private copy of the timing inputs (I); everything else there is the candidate's own.
Each process also holds its CUDA context (~0.5 GiB), and each judge started ahead three of them (judges_ahead), ~1.9
GiB on the H100: beside a pair that crowds the GPU (crowds_the_gpu) none starts CUDA, and those that had are replaced
by judges that have not (judge_processes.JudgeStarter.make_room); beside any other pair they are taken from the free
memory its pre-flight check sees. Once per machine (and torch version), the first
pair's judge measures the device's peaks after its timing (roofline.device_peaks: ~5 GiB for a moment, then handed
back, and left out of that judge's reported peak; where that memory is not free, that pair goes without a speed of
light and a later one measures them).
"""
from __future__ import annotations

import re

from harness.common.problem_info import Sizes, gib

OUT_OF_MEMORY = re.compile(r"OutOfMemoryError|out of memory", re.I)  # an error message that is one

SLACK = 2**30  # allocator rounding, cuBLAS and cuDNN workspaces: once per pair, once for the candidate
# A pair that needs more of the GPU than this keeps the judges ahead of it off CUDA. (At a quarter, 45 of KernelBench's
# 250 problems crowd an 80 GB H100, 23 at a half; in the first 86 level-1 pairs on the H100, 36 judges then started
# CUDA with their pairs, 27.6 s in all.)
CROWDED_SHARE = 0.5


def stages(size: Sizes) -> dict:
    """{stage: {process: bytes}}: what each process of the harness holds at its peak in each stage (the docstring)."""
    i, o, w = size.inputs, size.outputs, size.weights
    return {"correctness": {"judge": 2 * i + 2 * o + 3 * w, "reference worker": w, "candidate's worker": 0},
            "timing": {"judge": max(3 * i, 2 * i + o) + 3 * w, "reference worker": reference_worker_need(size),
                       "candidate's worker": i}}


def judge(size: Sizes) -> int:
    return max(stage["judge"] for stage in stages(size).values())


def candidate_share(size: Sizes) -> int:
    """What the harness puts in the candidate's worker (its copy of the timing inputs): never counted against it."""
    return max(stage["candidate's worker"] for stage in stages(size).values())


def harness(size: Sizes) -> int:
    """The whole harness's memory for the pair at its peak stage, with the slack."""
    return max(sum(stage.values()) for stage in stages(size).values()) + SLACK


def least(size: Sizes) -> int:
    """What the harness cannot do without, when the device is short: the judge's trial inputs, the candidate's copy
    and the reference's output (2I + O) and the reference model (W), the float64 truth and the cached timing copies
    giving way (judge.truth checks the room it needs; PairTiming.retried_when_full hands caches back and tries again);
    the reference worker's I + O + W; the candidate's copy of the inputs; the slack. (The cached copies and the truth
    let KernelBench's 45_Average_Pooling_2D, 16 GiB in, run on an 80 GB H100, which the full budget would not.)"""
    return (2 * size.inputs + size.outputs + size.weights) + reference_worker_need(size) + size.inputs + SLACK


def reference_worker_need(size: Sizes) -> int:
    return size.inputs + size.outputs + size.weights


def candidate_room(size: Sizes) -> int:
    """What a candidate of the reference's size holds of its own: its output and weights, plus the slack."""
    return size.outputs + size.weights + SLACK


def candidate_allowance(size: Sizes, reference_call: int = 0) -> int:
    """The memory a candidate may hold of its own before an out-of-memory is its doing: twice what a call of the
    reference's size holds (its inputs, weights, and its output or, if larger, what the reference's own call was
    measured to allocate: `reference_call`, its temporaries and workspaces), plus the slack. Sigmoid with three
    full-size temporaries beside its output holds 4 outputs' worth: within it."""
    return 2 * (size.inputs + size.weights + max(size.outputs, reference_call)) + SLACK


def candidates_own(size: Sizes, held: int, reference_call: int = 0) -> tuple[int, int, bool]:
    """The out-of-memory rule: of what the candidate's worker held (or held and asked for), (its own, beyond the
    harness's share there; its allowance; whether it is over the allowance, so the shortage is its doing)."""
    own, allowance = held - candidate_share(size), candidate_allowance(size, reference_call)
    return own, allowance, own > allowance


def pair_need(size: Sizes) -> tuple[int, str]:
    """What a GPU pair needs free before it starts (problem_info.memory_shortfall's `need`): the harness's budget and
    room for a candidate of the reference's size; and how it was reckoned."""
    return least(size) + candidate_room(size), (
        f"the harness's {gib(least(size))} at the least (its budget {gib(harness(size))}) and room for a candidate of "
        f"the reference's size, {gib(candidate_room(size))}: harness/judge/footprint.py")


def crowds_the_gpu(need: int, device_total: int) -> bool:
    """Whether a pair needing `need` bytes (pair_need) crowds a GPU of `device_total` bytes: there the judges ahead's
    contexts (~1.9 GiB each on the H100) count, and their start-up (~0.75 s) is small beside the pair's own time.
    (The full-size sigmoid needs 44 GiB of the H100's 79.6.)"""
    return need > CROWDED_SHARE * device_total
