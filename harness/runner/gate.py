"""CI gating: which pairs fail a gate (status, minimum speedup, regression against a baseline board),
JUnit XML for CI systems, and the per-pair comparison of two runs."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional
from xml.etree import ElementTree

import pandas as pd

from harness.common.errors import UserError
from harness.common import verdict
from harness.common.records import SCHEMA_VERSION, Result, check_schema_version
from harness.common.verdict import Status


@dataclass
class Change:
    """How one pair moved between two runs."""

    problem: str
    candidate: str
    old_status: Optional[str]
    new_status: Optional[str]
    old_speedup: Optional[float]
    new_speedup: Optional[float]
    verdict: str  # faster, slower, same (CIs overlap), unmeasured (...), status changed, not comparable: ..., new, gone
    worse: Optional[str] = None  # verdict.got_worse's reason, where the pair got worse


def read_baseline(path: Path) -> dict:
    """A leaderboard CSV as {(problem, candidate): row}; the columns the gate reads must be there."""
    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError) as exc:  # pandas' parser errors are ValueErrors
        raise UserError(f"--baseline {path}: cannot read it as CSV ({type(exc).__name__}: {exc})") from None
    missing = {"problem", "candidate", "speedup", "speedup_ci_low", "speedup_ci_high"} - set(frame.columns)
    if missing:
        raise UserError(f"--baseline {path}: not a leaderboard.csv (no {', '.join(sorted(missing))} column)")
    # Boards made before the column existed are of the first version.
    for version in set(frame["schema_version"]) if "schema_version" in frame.columns else {SCHEMA_VERSION}:
        check_schema_version(version, f"--baseline {path}")
    return {(row["problem"], row["candidate"]): row for row in frame.to_dict("records")}


def gate_failures(results: list[Result], min_speedup: Optional[float] = None,
                  baseline: Optional[dict] = None, fail_on_skip: bool = False) -> dict:
    """{(problem, candidate): reason} for each pair that fails the gate (verdict.gate_failure; see harness_errors)."""
    failures = {}
    for r in results:
        key = (r.problem, r.solution)
        reason = verdict.gate_failure(r, min_speedup, baseline.get(key) if baseline else None, fail_on_skip)
        if reason:
            failures[key] = reason
    return failures


def baseline_gaps(results: list[Result], baseline: dict) -> dict:
    """{(problem, candidate): why} for each pair with no comparable baseline row (verdict.not_comparable)."""
    gaps = {}
    for r in results:
        row = baseline.get((r.problem, r.solution))
        gap = "no baseline row" if row is None else verdict.not_comparable(row, r)
        if gap:
            gaps[(r.problem, r.solution)] = gap
    return gaps


def harness_errors(results: list[Result]) -> dict:
    """{(problem, candidate): reason} for every pair the harness itself failed to judge."""
    return {(r.problem, r.solution): r.error or "no reason given" for r in results if r.status == Status.HARNESS_ERROR}


def junit_xml(results: list[Result], failures: dict) -> str:
    """JUnit XML, a testcase per pair (classname problem, name candidate); a harness_error is an <error>."""
    errors = harness_errors(results)
    skipped = sum(r.status == Status.SKIPPED and (r.problem, r.solution) not in failures for r in results)
    suite = ElementTree.Element("testsuite", name="kernel-harness", tests=str(len(results)),
                                failures=str(len(failures)), errors=str(len(errors)), skipped=str(skipped),
                                time=f"{sum(r.wall_s or 0.0 for r in results):.3f}")
    for r in sorted(results, key=lambda r: (r.problem, r.solution)):
        case = ElementTree.SubElement(suite, "testcase", classname=r.problem, name=r.solution,
                                      time=f"{r.wall_s or 0.0:.3f}")
        reason = failures.get((r.problem, r.solution))
        if r.status == Status.SKIPPED and not reason:  # not judged here (a CUDA candidate on a CPU runner, say)
            ElementTree.SubElement(case, "skipped", message=(r.error or "skipped")[:500])
        elif (r.problem, r.solution) in errors:
            error = ElementTree.SubElement(case, "error", message=errors[(r.problem, r.solution)][:500], type=r.status)
            error.text = errors[(r.problem, r.solution)]
        elif reason:
            failure = ElementTree.SubElement(case, "failure", message=reason[:500], type=failure_type(r, reason))
            failure.text = reason
        elif r.speedup is not None:
            ElementTree.SubElement(case, "system-out").text = (
                f"speedup {r.speedup:.3f} [{r.speedup_ci_low:.3f}, {r.speedup_ci_high:.3f}]")
    ElementTree.indent(suite)
    return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def failure_type(result: Result, reason: str) -> str:
    """A JUnit failure's type: the status if not correct, else the flag that failed the gate, or `speed`."""
    if result.status != Status.CORRECT:
        return str(result.status)
    named = reason.split(":", 1)[0]
    return named if named in verdict.FLAGS else "speed"


def compare_runs(old: list[Result], new: list[Result]) -> list[Change]:
    """Per pair, old run against new (verdict.change_between, verdict.got_worse)."""
    before = {(r.problem, r.solution): r for r in old}
    after = {(r.problem, r.solution): r for r in new}
    changes = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        worse = verdict.got_worse(a, b) if a and b and not verdict.not_comparable(a, b) else None
        changes.append(Change(key[0], key[1], a.status if a else None, b.status if b else None,
                              a.speedup if a else None, b.speedup if b else None,
                              verdict.change_between(a, b), worse))
    return changes
