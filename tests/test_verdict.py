"""One place decides what a result means: every flag through the board, the aggregates, the gate, JUnit and compare."""
import re
from pathlib import Path

import pandas as pd
import pytest

from support import ROOT
from harness.runner import boards, gate
from harness.common import verdict
from harness.common.records import Result
from harness.common.verdict import FLAGS, Status


def timed(solution: str, speedup: float, *flags: str, problem: str = "p") -> Result:
    """A correct, timed pair with these flags."""
    return Result(problem=problem, solution=solution, status=Status.CORRECT, flags=list(flags), speedup=speedup,
                  speedup_ci_low=speedup * 0.99, speedup_ci_high=speedup * 1.01, solution_path=f"gen/{solution}.py")


@pytest.mark.parametrize("name", sorted(FLAGS))
def test_each_flag_has_the_same_effect_on_board_aggregates_gate_junit_and_compare(name):
    spec = FLAGS[name]
    flagged, plain = timed("flagged", 50.0, name), timed("plain", 1.2)
    board = boards.leaderboard([flagged, plain])
    row = board.set_index("candidate").loc["flagged"]
    assert (not pd.isna(row["rank"])) == spec.counts, name
    assert board.set_index("candidate").loc["plain"]["rank"] == (2 if spec.counts else 1)
    geomean = boards.aggregates(board).set_index("candidate_set").loc["gen", "geomean_speedup"]
    assert geomean == pytest.approx(50.0 if spec.counts else 1.2), name
    if not spec.counts:
        assert name in row["reason"], row["reason"]  # the board says why it is not ranked

    for min_speedup, speed_asked in ((None, False), (1.0, True)):
        failures = gate.gate_failures([flagged], min_speedup)
        should_fail = spec.fails_gate or (spec.fails_speed_gate and speed_asked)
        assert (("p", "flagged") in failures) == should_fail, (name, min_speedup)
        junit = gate.junit_xml([flagged], failures)
        assert ("<failure" in junit) == should_fail

    change = gate.compare_runs([timed("flagged", 1.0)], [flagged])[0].verdict
    # compare calls a change as the gate judges one: only a flag that fails every gate makes it no measurement
    assert change == (f"unmeasured ({name})" if spec.fails_gate else "faster"), change


def test_a_flag_that_voids_the_speedup_is_never_ranked_above_a_plain_one():
    board = boards.leaderboard([timed("tampered", 50.0, "timer_tampering"), timed("honest", 1.1)])
    assert list(board["candidate"]) == ["honest", "tampered"] and board["rank"].tolist()[0] == 1


def test_flags_are_checked_by_name():
    with pytest.raises(ValueError):
        verdict.flag("timer_tamper")
    with pytest.raises(ValueError):
        verdict.Verdict(Status.INCORRECT, "why", "no_such_flag")


def test_every_flag_the_harness_sets_is_a_known_one():
    """Flags are set by name across the judge's modules: each name there must be in verdict.FLAGS."""
    source = "\n".join(p.read_text() for p in (ROOT / "harness").rglob("*.py"))
    used = set(re.findall(r'flags\.append\((?:flag\()?"(\w+)"', source))
    used |= set(re.findall(r'flag\("(\w+)"\)', source))
    used |= {m for args in re.findall(r'Verdict\(Status\.\w+, [^\n]*?((?:, "\w+")+)\)', source)
             for m in re.findall(r'"(\w+)"', args)}
    assert used and used <= set(FLAGS), used - set(FLAGS)
    documented = (ROOT / "README.md").read_text()
    assert all(f"`{name}`" in documented for name in FLAGS), [n for n in FLAGS if f"`{n}`" not in documented]


def test_the_gate_reason_names_the_status_or_the_flag():
    wrong = Result(problem="p", solution="w", status=Status.INCORRECT, error="trial 1/7: 3 of 9 elements outside")
    assert verdict.gate_failure(wrong) == "incorrect: trial 1/7: 3 of 9 elements outside"
    assert verdict.gate_failure(timed("d", 2.0, "degenerate_problem")).startswith("degenerate_problem: ")
    assert verdict.gate_failure(timed("n", 2.0, "noisy_timing")) is None  # correctness only: no speed asked
    assert verdict.gate_failure(timed("n", 2.0, "noisy_timing"), 1.0) is None  # its whole CI clears the bar
    assert verdict.gate_failure(timed("s", 0.8), 1.0) == "speedup 0.800 [0.792, 0.808] is under the minimum 1"
    assert verdict.gate_failure(timed("u", 1.0), 1.0).startswith("undecided: speedup 1.000 [0.990, 1.010] straddles")
    skipped = Result(problem="p", solution="s", status=Status.SKIPPED, error="needs a CUDA GPU")
    assert verdict.gate_failure(skipped) is None and verdict.gate_failure(skipped, fail_on_skip=True).startswith("skipped")
    assert verdict.gate_failure(Result(problem="p", solution="h", status=Status.HARNESS_ERROR)) is None


def test_a_skipped_pair_is_a_junit_skip_and_fails_a_gate_only_on_request():
    skipped = Result(problem="p", solution="cuda_only", status=Status.SKIPPED, error="needs a CUDA GPU, device is cpu")
    results = [skipped, timed("ok", 1.5)]
    junit = gate.junit_xml(results, gate.gate_failures(results))
    assert '<skipped message="needs a CUDA GPU, device is cpu"' in junit and "<failure" not in junit
    assert 'skipped="1"' in junit
    strict = gate.gate_failures(results, fail_on_skip=True)
    assert list(strict) == [("p", "cuda_only")] and '<failure message="skipped: needs a CUDA GPU' in gate.junit_xml(results, strict)
