"""The CI gate, JUnit and run comparison (harness/runner/gate.py), from golden results (no judging)."""
from xml.etree import ElementTree

from support import golden_results
from harness.runner import boards, gate
from harness.common.records import Result


def test_gate_fails_status_minimum_and_regression():
    results = golden_results()
    failures = gate.gate_failures(results)
    assert set(failures) == {("sigmoid", "wrong"), ("sigmoid", "broken"), ("matmul", "gen_a")}
    assert failures[("matmul", "gen_a")].startswith("timeout: no reply")
    assert gate.gate_failures(results, min_speedup=0.9)[("sigmoid", "slow")].startswith("speedup 0.500 [0.490, 0.510]")
    assert ("sigmoid", "slow") not in gate.gate_failures(results, min_speedup=0.1)  # noisy, but its whole CI clears
    straddling = gate.gate_failures(results, min_speedup=0.5)[("sigmoid", "slow")]
    assert straddling.startswith("undecided: ") and "2.0% under it" in straddling
    on = {"status": "correct", "gpu": "NVIDIA H100 80GB HBM3", "precision": "fp32", "mode": "constructed"}
    baseline = {("sigmoid", "fast"): {**on, "speedup": 2.7, "speedup_ci_low": 2.6, "speedup_ci_high": 2.8},
                ("sigmoid", "tie"): {**on, "speedup": 1.003, "speedup_ci_low": 0.99, "speedup_ci_high": 1.01},
                ("sigmoid", "slow"): {**on, "speedup": 0.4, "speedup_ci_low": 0.39, "speedup_ci_high": 0.41}}
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



def test_a_baseline_row_measured_at_other_sizes_is_not_comparable_and_no_row_is_listed():
    """A CPU run at 32x2048 gated against an H100 board row: 'not comparable', with what differs, never slower."""
    results = golden_results()
    fast = next(r for r in results if r.solution == "fast")
    fast.gpu, fast.overrides = None, {"batch_size": 32, "dim": 2048}
    row = {"status": "correct", "gpu": "NVIDIA H100 80GB HBM3", "precision": "fp32", "mode": "constructed",
           "sizes": float("nan"), "speedup": 9.0, "speedup_ci_low": 8.9, "speedup_ci_high": 9.1}
    baseline = {("sigmoid", "fast"): row}
    assert ("sigmoid", "fast") not in gate.gate_failures(results, baseline=baseline)
    gaps = gate.baseline_gaps(results, baseline)
    assert gaps[("sigmoid", "fast")] == ("not comparable: gpu NVIDIA H100 80GB HBM3 vs no GPU; sizes the problem's own "
                                         "vs batch_size=32 dim=2048")
    assert gaps[("sigmoid", "tie")] == "no baseline row"


def test_compare_and_the_gate_share_one_rule_for_worse():
    """A 0.983 -> 0.128 slowdown flagged noisy_timing is slower for both; correct -> skipped is worse."""
    old = golden_results()
    new = [Result.from_dict({**r.to_dict()}) for r in old]
    slow = next(r for r in new if r.solution == "tie")
    slow.speedup, slow.speedup_ci_low, slow.speedup_ci_high, slow.flags = 0.128, 0.12, 0.14, ["noisy_timing"]
    skipped = next(r for r in new if r.solution == "fast")
    skipped.status, skipped.error = "skipped", "needs a CUDA GPU"
    changes = {(c.problem, c.candidate): c for c in gate.compare_runs(old, new)}
    assert changes[("sigmoid", "tie")].worse.startswith("slower: speedup 0.128")
    assert changes[("sigmoid", "fast")].worse == "correct -> skipped: needs a CUDA GPU"
    board_row = {**next(r for r in old if r.solution == "tie").to_dict(), "status": "correct"}
    assert gate.gate_failures([slow], baseline={("sigmoid", "tie"): board_row})[("sigmoid", "tie")].startswith(
        "slower than the baseline: speedup 0.128")


def test_an_undecided_gate_says_what_can_decide_it():
    """On the CPU the CI is always widened by cpu_resolution_pct (3%): a speedup within that of the bar stays across
    it however many rounds run, and the reason says so instead of asking for more rounds."""
    close = Result(problem="p", solution="s", status="correct", speedup=1.01, speedup_ci_low=0.975,
                   speedup_ci_high=1.045, resolution_pct=3.0)
    reason = gate.gate_failures([close], min_speedup=1.0)[("p", "s")]
    assert "no number of rounds can decide it" in reason and "(3%)" in reason and "more rounds" not in reason
    far = Result(problem="p", solution="s", status="correct", speedup=1.08, speedup_ci_low=0.99, speedup_ci_high=1.17,
                 resolution_pct=3.0)
    assert gate.gate_failures([far], min_speedup=1.0)[("p", "s")].endswith("gate_timing_s) may decide")
