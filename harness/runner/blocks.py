"""A no-tie near 1.0 judged again on fresh judges and workers ("blocks"), since a worker process carries its own timing
offset; the reported CI spans every block's. Pure functions of Results: docs/decisions/process-offset.md."""
from __future__ import annotations

import copy
import math
import statistics
from typing import Callable, Optional

from harness.common.config import Config
from harness.common.records import Result
from harness.common.stats import is_tie
from harness.common.verdict import Status

BLOCK_FIELDS = ("speedup", "speedup_ci_low", "speedup_ci_high", "ref_ms", "new_ms", "timing_rounds")


def timed_ci(result: Result) -> Optional[tuple[float, float]]:
    """The speedup's CI of a correct, timed pair; None for any other."""
    low, high = result.speedup_ci_low, result.speedup_ci_high
    if result.status == Status.CORRECT and isinstance(low, float) and isinstance(high, float):
        return low, high
    return None


def is_claim(result: Result) -> bool:
    """A correct, timed pair whose speedup's CI leaves out 1.0."""
    ci = timed_ci(result)
    return ci is not None and not ci[0] <= 1.0 <= ci[1]


def needs_confirmation(result: Result, cfg: Config) -> bool:
    """No tie (even if its CI holds 1.0) within process_band_pct? docs/decisions/confirm-no-ties.md"""
    if cfg.resolution.process_blocks < 2 or timed_ci(result) is None or result.speedup is None or result.tie:
        return False
    return abs(math.log(result.speedup)) <= math.log1p(cfg.resolution.process_band_pct / 100)


def judged_in_blocks(judge: Callable[[int], Result], cfg: Config) -> Result:
    """judge(1), then blocks 2..process_blocks until the merged Result is a tie; a block not correct ends the pair."""
    first = judge(1)
    if not needs_confirmation(first, cfg):
        return first
    blocks, result = [first], first
    for block in range(2, cfg.resolution.process_blocks + 1):
        one = judge(block)
        if one.status != Status.CORRECT or one.speedup is None:
            return failed_block(first, one, block)  # a fresh worker's wrong output is a finding
        blocks.append(one)
        result = merged(blocks)
        if not is_claim(result) and result.tie:  # nothing claimed, and no block left to move the point off a tie
            break
    return result


def merged(blocks: list) -> Result:
    """The blocks as one Result: first's correctness, median speedup (nearest block's timings), CIs' hull, all flags."""
    speedup = math.exp(statistics.median(math.log(r.speedup) for r in blocks))
    middle = min(blocks, key=lambda r: abs(math.log(r.speedup / speedup)))
    result = copy.deepcopy(blocks[0])
    for name in ("speedup", "ref_ms", "new_ms", "gbps", "ref_gbps", "tflops", "ref_tflops", "sol_pct", "ref_sol_pct",
                 "ref_samples_ms", "new_samples_ms", "ref_wall_ms", "new_wall_ms", "timing_rounds", "clocks",
                 "ref_timer", "new_timer", "ref_batch", "new_batch", "round_order"):
        setattr(result, name, copy.deepcopy(getattr(middle, name)))
    result.speedup = speedup
    result.speedup_ci_low = min(r.speedup_ci_low for r in blocks)
    result.speedup_ci_high = max(r.speedup_ci_high for r in blocks)
    result.tie = is_tie({"speedup": result.speedup, "speedup_ci_low": result.speedup_ci_low,
                         "speedup_ci_high": result.speedup_ci_high})
    for block in blocks[1:]:
        result.flags += [f for f in block.flags if f not in result.flags]
        result.notes += [n for n in block.notes if n not in result.notes]
        result.timed_outputs_checked = (result.timed_outputs_checked or 0) + (block.timed_outputs_checked or 0)
    result.blocks = [figures(r) for r in blocks]
    phases = dict(result.phases_s or {})
    phases["confirmation_blocks"] = round(sum((r.wall_s or 0.0) for r in blocks[1:]), 3)
    result.phases_s = phases
    return result


def failed_block(first: Result, failed: Result, block: int) -> Result:
    """The pair's Result when confirmation block `block` is not correct: that block's verdict."""
    result = copy.deepcopy(failed)
    result.error = f"confirmation block {block} on fresh workers: {failed.error}"
    result.blocks = [figures(first), figures(failed)]
    return result


def figures(block: Result) -> dict:
    """One block's entry in `blocks`: its speedup, CI, medians, rounds and wall seconds."""
    return {name: getattr(block, name) for name in (*BLOCK_FIELDS, "wall_s")}

