"""Leaderboard, aggregates, summary, plots, gate, JUnit and compare, from golden results (no judging)."""
import json
import shutil
import subprocess
import sys
from xml.etree import ElementTree

import pandas as pd
import pytest

from support import FIXTURES, ROOT
from harness import boards, gate
from harness.records import Result

GOLDEN = FIXTURES / "reports"


def golden_results() -> list[Result]:
    return [Result.from_dict(json.loads(line)) for line in (GOLDEN / "results.jsonl").read_text().splitlines()]


def test_leaderboard_ranks_correct_candidates_per_problem():
    board = boards.leaderboard(golden_results())
    assert list(board.columns) == [c for c, _ in boards.LEADERBOARD_COLUMNS]
    rows = [(r.problem, r.candidate, None if pd.isna(r.rank) else int(r.rank), r.status) for r in board.itertuples()]
    assert rows == [
        ("matmul", "gen_a", None, "timeout"),
        ("sigmoid", "fast", 1, "correct"), ("sigmoid", "tie", 2, "correct"),
        ("sigmoid", "slow", None, "correct"),  # noisy_timing: its speedup is shown, never ranked
        ("sigmoid", "wrong", None, "incorrect"), ("sigmoid", "broken", None, "compile_error"),
        ("softmax", "ok", 1, "correct"), ("softmax", "gen_a", 2, "correct"),
    ]
    slow = board[board.candidate == "slow"].iloc[0]
    assert slow["flags"] == "noisy_timing" and slow.candidate_set == "solutions" and slow.date == "2026-11-22"
    assert slow.torch == "2.11.0+cu130" and slow.cuda == "13.0" and slow.harness.startswith("0123456789")
    assert board[board.problem == "matmul"].iloc[0].candidate_set == "model_a"


def test_aggregates_fast_p_and_geomean_per_candidate_set():
    totals = boards.aggregates(boards.leaderboard(golden_results())).set_index("candidate_set")
    assert list(totals.index) == ["model_a", "solutions", "all"]
    solutions = totals.loc["solutions"]
    assert (solutions.problems, solutions.correct) == (2, 2)
    assert (solutions.fast_0, solutions.fast_1, solutions["fast_1.5"], solutions.fast_2) == (1.0, 1.0, 1.0, 0.5)
    assert solutions.geomean_speedup == pytest.approx(2.0)  # sqrt(2.5 x 1.6): best of each problem
    model_a = totals.loc["model_a"]
    assert (model_a.problems, model_a.correct, model_a.fast_0, model_a["fast_1.5"]) == (2, 1, 0.5, 0.0)
    everything = totals.loc["all"]
    assert everything.problems == 3 and everything.fast_2 == pytest.approx(1 / 3, abs=1e-4)


def test_summary_names_the_run_and_every_pair():
    board = boards.leaderboard(golden_results())
    text = boards.summary_markdown(board, boards.aggregates(board), "Results: golden")
    assert "8 pair(s) on NVIDIA H100 80GB HBM3; torch 2.11.0+cu130, CUDA 13.0; harness 0123456789ab; 2026-11-22." in text
    assert "| sigmoid | 1 | fast | correct | 2.500 [2.450, 2.550] |" in text
    assert "| solutions | 2 | 2 | 1.00 | 1.00 | 1.00 | 0.50 | 2.000 |" in text
    assert "![speedup per candidate](speedups.png)" in text


def test_files_match_the_golden_ones_and_plots_are_deterministic(tmp_path):
    board = boards.write_boards(tmp_path, golden_results())
    for name in ("leaderboard.csv", "aggregates.csv"):
        assert (tmp_path / name).read_text() == (GOLDEN / name).read_text(), name
    assert boards.plot_speedups(board) == (tmp_path / "speedups.png").read_bytes()  # same data, same bytes
    assert (tmp_path / "roofline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_every_column_is_documented():
    docs = (ROOT / "docs" / "leaderboard.md").read_text()
    for column, _ in boards.LEADERBOARD_COLUMNS + boards.AGGREGATE_COLUMNS:
        assert f"`{column}`" in docs, column


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


def test_report_rebuilds_byte_identical_files_and_gates(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(GOLDEN / "results.jsonl", run / "results.jsonl")
    first = subprocess.run([sys.executable, "run.py", "report", str(run)], cwd=ROOT, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    names = ["leaderboard.csv", "aggregates.csv", "summary.md", "speedups.csv", "speedups.png", "roofline.png"]
    before = {n: (run / n).read_bytes() for n in names}
    junit = tmp_path / "junit.xml"
    gated = subprocess.run([sys.executable, "run.py", "report", str(run), "--gate", "--junit", str(junit)],
                           cwd=ROOT, capture_output=True, text=True)
    assert gated.returncode == 1 and "sigmoid/broken" in gated.stderr
    assert {n: (run / n).read_bytes() for n in names} == before
    assert ElementTree.parse(junit).getroot().get("failures") == "3"
    compare = subprocess.run([sys.executable, "run.py", "compare", str(run), str(run)], cwd=ROOT,
                             capture_output=True, text=True)
    assert compare.returncode == 0 and "same" in compare.stdout
