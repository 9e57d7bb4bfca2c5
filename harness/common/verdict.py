"""What a result means, in one place: statuses, flags and their effects, whether a speedup counts, gate failures."""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Optional


class Status(str, enum.Enum):
    """The verdict of one pair; exactly one per Result."""

    CORRECT = "correct"
    INCORRECT = "incorrect"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    CRASH = "crash"
    SKIPPED = "skipped"
    HARNESS_ERROR = "harness_error"  # the harness failed, not the candidate

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__  # type: ignore[assignment]  # widths in tables


WORKER_STATUSES = (Status.COMPILE_ERROR.value, Status.RUNTIME_ERROR.value)  # all a worker's reply may claim


class Verdict(Exception):
    """Ends the judging of a pair early with a status (the run goes on)."""

    def __init__(self, status: Status, error: str, *flags: str):
        super().__init__(error)
        self.status, self.error, self.flags = status, error, [flag(f) for f in flags]
        self.weights_may_explain = False  # judge.trials: a retry with the reference's weights may pass


@dataclass(frozen=True)
class Flag:
    """A finding that does not decide the status, and its effect on the speedup and on a gate."""

    name: str
    meaning: str
    counts: bool = True  # False: shown, never ranked, in fast_p or a geomean
    fails_gate: bool = False  # every gate fails the pair
    fails_speed_gate: bool = False  # a gate asking for speed (a minimum or a baseline) fails the pair


FLAGS = {f.name: f for f in (
    Flag("input_mutated", "the candidate changed its inputs (comes with incorrect)"),
    Flag("output_aliases_input", "an output shares storage with an input"),
    Flag("reduced_precision", "its error against the float64 truth is over reduced_precision_ratio times the "
                              "reference's, and at least 1% of the tolerance"),
    Flag("accurate_vs_fp64", "outside the tolerance of the reference's output somewhere, but at least as accurate "
                             "as the reference against the float64 truth (truth_accuracy_factor), so correct"),
    Flag("within_reference_error", "outside the tolerance of the reference's output where no float64 truth fitted "
                                   "in memory, but within the room the reference's own error against float64 in the "
                                   "trials leaves (notes say how far), so correct"),
    Flag("weights_copied", "correct only once the reference's weights were copied over its own same-named, "
                           "same-shaped parameters (its own __init__ drew them in another order)"),
    Flag("no_custom_kernel", "its runtime trace shows only kernels or operators the reference launches"),
    Flag("nondeterministic", "two calls on the same inputs differ by over 4x what two calls of the reference differ"),
    Flag("wrong_timed_output", "a timed call's output was wrong (comes with incorrect)"),
    Flag("excessive_speedup", "a speedup above the configured excessive_speedup"),
    Flag("below_roofline", "faster than 95% of the roofline floor of the measured peaks"),
    Flag("throttled", "the SM clock fell below 90% of its high during the rounds"),
    Flag("noisy_timing", "the rounds could not bring the speedup's CI within target_ci_pct: the speedup is not ranked "
                         "(a gate that asks for speed decides from its CI)", counts=False),
    Flag("timer_tampering", "its reported times disagree with the judge's own clock", counts=False, fails_gate=True),
    Flag("interference", "another process used the GPU around the timed windows, or the reference's worker was "
                         "rescheduled: no speedup is given", counts=False, fails_gate=True),
    Flag("degenerate_problem", "the problem's output is constant or ignores its inputs, so it cannot tell a right "
                               "kernel from a wrong one (problem_findings says how)", counts=False, fails_gate=True),
)}

# How a correct verdict was reached: a failed verdict drops them.
PASSING_FLAGS = ("accurate_vs_fp64", "within_reference_error", "weights_copied")


def flag(name: str) -> str:
    """A flag's name, checked against FLAGS (ValueError: a bug)."""
    if name not in FLAGS:
        raise ValueError(f"unknown flag {name!r}")
    return name


def speedup_counts(status, flags) -> bool:
    """Does the speedup count (ranked, fast_p, geomeans, compare): correct, and no flag with counts=False?"""
    return str(status) == Status.CORRECT.value and all(FLAGS[f].counts for f in flags if f in FLAGS)


def not_counted_reason(flags) -> Optional[str]:
    """The flags that keep the speedup from counting, joined; None when it counts."""
    voiding = sorted(f for f in set(flags) if f in FLAGS and not FLAGS[f].counts)
    return ", ".join(voiding) or None


def unranked_reason(result) -> Optional[str]:
    """Why a correct pair's speedup is not ranked (None: ranked, or none)."""
    if result.status != Status.CORRECT or result.speedup is None or speedup_counts(result.status, result.flags):
        return None
    findings = "; ".join(getattr(result, "problem_findings", None) or [])
    return f"speedup not ranked: {not_counted_reason(result.flags)}" + (f" ({findings})" if findings else "")


def gate_failure(result, min_speedup: Optional[float] = None, baseline: Optional[dict] = None,
                 fail_on_skip: bool = False) -> Optional[str]:
    """Why `result` fails a gate, or None (harness_error; skipped without fail_on_skip). Its CI decides."""
    if result.status == Status.HARNESS_ERROR or (result.status == Status.SKIPPED and not fail_on_skip):
        return None
    if result.status != Status.CORRECT:
        return f"{result.status}: {result.error or 'no reason given'}"
    speed_asked = min_speedup is not None or baseline is not None
    for name in sorted(set(result.flags)):
        spec = FLAGS.get(name)
        if spec is not None and (spec.fails_gate or (spec.fails_speed_gate and speed_asked)):
            return f"{name}: {spec.meaning}"
    if min_speedup is not None:
        reason = under_minimum(result, min_speedup)
        if reason:
            return reason
    worse = got_worse(baseline, result) if baseline is not None and not not_comparable(baseline, result) else None
    if worse:
        return ("slower than the baseline: " + worse.removeprefix("slower: ") if worse.startswith("slower: ")
                else f"worse than the baseline: {worse}")
    return None


def under_minimum(result, bar: float) -> Optional[str]:
    """None when the whole CI clears the bar; else why not (under it, or straddling it)."""
    low, high = result.speedup_ci_low, result.speedup_ci_high
    if not (is_number(low) and is_number(high)):
        return f"no speedup was measured (minimum {bar:g})"
    shown = f"speedup {fmt(result.speedup)} [{fmt(low)}, {fmt(high)}]"
    if not across(low, high, bar):
        return None if low >= bar else f"{shown} is under the minimum {bar:g}"
    under_pct = 100 * (bar - low) / bar
    undecided = f"undecided: {shown} straddles the minimum {bar:g} (its low end {under_pct:.1f}% under it)"
    resolution = getattr(result, "resolution_pct", None)
    if is_number(resolution) and is_number(result.speedup) and abs(result.speedup / bar - 1) * 100 < resolution:
        return (f"{undecided}; no number of rounds can decide it: the speedup lies within the harness's resolution "
                f"here ({resolution:g}%) of the bar, so only a speedup further from it (or a bar further from it) "
                f"decides")
    return f"{undecided}; more rounds (max_rounds, max_timing_s, gate_timing_s) may decide"


def across(low: float, high: float, bar: float) -> bool:
    """Does the CI hold the bar (undecided)? A low end at the bar clears it."""
    return low < bar <= high


# Two speedups are compared only where all of these agree.
MEASURED_ON = ("gpu", "precision", "mode", "sizes")


def sizes_text(overrides) -> str:
    """A pair's --set sizes as a leaderboard shows them ('batch_size=32 dim=2048'; '' for none)."""
    return " ".join(f"{k}={v!r}" for k, v in sorted(overrides.items())) if isinstance(overrides, dict) else ""


def measured_on(row) -> dict:
    """What a Result or leaderboard row (dict) was measured on: MEASURED_ON's keys."""
    def get(key):
        value = field(row, key)
        return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    sizes = get("sizes") if isinstance(row, dict) else sizes_text(getattr(row, "overrides", None))
    return {"gpu": get("gpu") or "no GPU", "precision": get("precision") or "fp32",
            "mode": get("mode") or "constructed",
            "sizes": sizes or "the problem's own"}


def not_comparable(old, new) -> Optional[str]:
    """'not comparable: ...' naming what differs in measured_on; None when all agree."""
    a, b = measured_on(old), measured_on(new)
    differ = [f"{key} {a[key]} vs {b[key]}" for key in MEASURED_ON if a[key] != b[key]]
    return "not comparable: " + "; ".join(differ) if differ else None


def got_worse(old, new) -> Optional[str]:
    """How a comparable pair got worse (correct lost, a new gate-failing flag, a CI wholly under the old), or None."""
    old_status, new_status = (str(field(r, "status")) for r in (old, new))
    if old_status != Status.CORRECT.value or new_status != Status.CORRECT.value:
        if old_status == Status.CORRECT.value:
            error = field(new, "error")
            return f"correct -> {new_status}" + (f": {error}" if error else "")
        return None
    newly = sorted(set(flag_list(field(new, "flags"))) - set(flag_list(field(old, "flags"))))
    failing = [f for f in newly if f in FLAGS and FLAGS[f].fails_gate]
    if failing:
        return f"newly flagged {', '.join(failing)}: {FLAGS[failing[0]].meaning}"
    low, high = field(old, "speedup_ci_low"), field(new, "speedup_ci_high")
    if is_number(low) and is_number(high) and high < low:
        return (f"slower: speedup {fmt(field(new, 'speedup'))} [{fmt(field(new, 'speedup_ci_low'))}, {fmt(high)}] "
                f"against {fmt(field(old, 'speedup'))} [{fmt(low)}, {fmt(field(old, 'speedup_ci_high'))}]")
    return None


def field(row, key):
    """A Result's attribute or a leaderboard row's column."""
    return row.get(key) if isinstance(row, dict) else getattr(row, key, None)


def flag_list(flags) -> list:
    """Flags as a list, from a list or a ';'-joined column."""
    if isinstance(flags, str):
        return [f for f in flags.split(";") if f]
    return list(flags) if isinstance(flags, (list, tuple)) else []


def change_between(old, new) -> str:
    """How a pair moved between runs, in words (whether it got worse: got_worse)."""
    if old is None or new is None:
        return "new" if old is None else "gone"
    gap = not_comparable(old, new)
    if gap:
        return gap
    if old.status != new.status:
        return "status changed"
    if old.speedup is None or new.speedup is None:
        return "same"
    voiding = sorted({f for f in [*old.flags, *new.flags] if f in FLAGS and FLAGS[f].fails_gate})
    if voiding:
        return f"unmeasured ({', '.join(voiding)})"
    if new.speedup_ci_low > old.speedup_ci_high:
        return "faster"
    if new.speedup_ci_high < old.speedup_ci_low:
        return "slower"
    return "same (CIs overlap)"


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def fmt(value) -> str:
    return f"{value:.3f}" if is_number(value) else "-"
