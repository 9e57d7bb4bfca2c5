"""The CI gate, JUnit and run comparison (harness/gate.py), from golden results (no judging)."""
from xml.etree import ElementTree

from support import golden_results
from harness import boards, gate
from harness.records import Result


def test_gate_fails_status_minimum_and_regression():
    results = golden_results()
    failures = gate.gate_failures(results)
    assert set(failures) == {("sigmoid", "wrong"), ("sigmoid", "broken"), ("matmul", "gen_a")}
    assert failures[("matmul", "gen_a")].startswith("timeout: no reply")
    assert gate.gate_failures(results, min_speedup=0.9)[("sigmoid", "slow")].startswith("speedup 0.500 [0.490, 0.510]")
    assert ("sigmoid", "slow") not in gate.gate_failures(results, min_speedup=0.1)  # noisy, but its whole CI clears
    straddling = gate.gate_failures(results, min_speedup=0.5)[("sigmoid", "slow")]
    assert straddling.startswith("undecided: ") and "2.0% under it" in straddling
    baseline = {("sigmoid", "fast"): {"speedup": 2.7, "speedup_ci_low": 2.6, "speedup_ci_high": 2.8},
                ("sigmoid", "tie"): {"speedup": 1.003, "speedup_ci_low": 0.99, "speedup_ci_high": 1.01},
                ("sigmoid", "slow"): {"speedup": 0.4, "speedup_ci_low": 0.39, "speedup_ci_high": 0.41}}
    regressions = gate.gate_failures(results, baseline=baseline)
    assert regressions[("sigmoid", "fast")].startswith("slower than the baseline")
    assert ("sigmoid", "tie") not in regressions  # CIs overlap: not a real change
    assert ("sigmoid", "slow") not in regressions  # faster than its baseline: its CI's high end is above its low end


def test_harness_errors_are_the_runs_and_tampering_fails_the_gate():
    results = golden_results() + [
        Result(problem="sigmoid", solution="judge_died", status="harness_error", error="the judge process died"),
        Result(problem="sigmoid", solution="forged", status="correct", flags=["timer_tampering"], speedup=50.0,
               speedup_ci_low=49.0, speedup_ci_high=51.0)]
    failures = gate.gate_failures(results)
    assert ("sigmoid", "judge_died") not in failures  # not the candidate's failure ...
    assert gate.harness_errors(results) == {("sigmoid", "judge_died"): "the judge process died"}  # ... the run's
    assert failures[("sigmoid", "forged")].startswith("timer_tampering")
    root = ElementTree.fromstring(gate.junit_xml(results, failures))
    assert root.get("errors") == "1"
    (errored,) = [c for c in root.findall("testcase") if c.find("error") is not None]
    assert errored.get("name") == "judge_died" and errored.find("failure") is None
    board = boards.leaderboard(results)
    assert "judge_died" in set(board["candidate"])  # listed, but left out of fast_p:
    assert boards.aggregates(board).equals(boards.aggregates(boards.leaderboard(results[:-2] + results[-1:])))


def test_junit_is_valid_with_one_testcase_per_pair():
    results = golden_results()
    root = ElementTree.fromstring(gate.junit_xml(results, gate.gate_failures(results)))
    assert root.tag == "testsuite" and root.get("tests") == "8" and root.get("failures") == "3"
    cases = root.findall("testcase")
    assert len(cases) == 8
    failed = {(c.get("classname"), c.get("name")): c.find("failure") for c in cases if c.find("failure") is not None}
    assert failed[("sigmoid", "broken")].text.startswith("compile_error: SyntaxError")


def test_compare_calls_a_change_real_only_when_cis_do_not_overlap():
    old = golden_results()
    new = [Result.from_dict({**r.to_dict()}) for r in old]
    by_name = {(r.problem, r.solution): r for r in new}
    by_name[("sigmoid", "fast")].speedup_ci_low, by_name[("sigmoid", "fast")].speedup_ci_high = 2.6, 2.7
    by_name[("sigmoid", "tie")].speedup_ci_low = 0.999  # moved, but the CIs still overlap
    by_name[("sigmoid", "wrong")].status = "correct"
    verdicts = {(c.problem, c.candidate): c.verdict for c in gate.compare_runs(old, new[:-1])}
    assert verdicts[("sigmoid", "fast")] == "faster"
    assert verdicts[("sigmoid", "tie")] == "same (CIs overlap)"
    assert verdicts[("sigmoid", "wrong")] == "status changed"
    assert verdicts[("matmul", "gen_a")] == "gone"


def test_a_junit_failure_of_a_correct_pair_says_what_failed_it_not_correct():
    results = golden_results()
    slow = next(r for r in results if (r.problem, r.solution) == ("sigmoid", "slow"))
    assert slow.status == "correct"
    root = ElementTree.fromstring(gate.junit_xml(results, gate.gate_failures(results, min_speedup=0.9)))
    types = {(c.get("classname"), c.get("name")): c.find("failure").get("type") for c in root.findall("testcase")
             if c.find("failure") is not None}
    assert types[("sigmoid", "slow")] == "speed" and types[("sigmoid", "broken")] == "compile_error"
