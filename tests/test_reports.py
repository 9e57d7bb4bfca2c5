"""The phases' typed reports (harness/judge/reports.py) and the one function that writes them into a Result."""
import dataclasses

from harness.common.records import Result
from harness.common.verdict import Status
from harness.judge.reports import CorrectnessReport, TimingReport, into_result


def test_every_report_field_is_a_result_field():
    columns = {f.name for f in dataclasses.fields(Result)}
    for report in (CorrectnessReport, TimingReport):
        assert {f.name for f in dataclasses.fields(report)} <= columns, report.__name__


def test_a_report_writes_what_it_set_and_adds_its_new_flags_again_as_a_phase_goes_on():
    result = Result(problem="p", solution="s", status=Status.CORRECT, flags=["interference"], backend="cuda")
    correctness = CorrectnessReport(trials=7, flags=["accurate_vs_fp64"], max_abs_err=0.5,
                                    problem_findings=["constant"])
    timing = TimingReport(ref_timer="cuda_graph", speedup=1.5, ref_wall_ms=[1.0, 2.0])
    into_result(result, correctness)
    correctness.flags.append("within_reference_error")  # a timed round's check
    timing.flags.append("noisy_timing")
    into_result(result, correctness, timing)
    assert result.flags == ["interference", "accurate_vs_fp64", "within_reference_error", "noisy_timing"]
    assert (result.trials, result.max_abs_err, result.problem_findings) == (7, 0.5, ["constant"])
    assert (result.ref_timer, result.speedup, result.ref_wall_ms) == ("cuda_graph", 1.5, [1.0, 2.0])
    assert result.backend == "cuda" and result.sol_pct is None  # what the report left unset stays as it was


def test_a_report_takes_no_field_it_does_not_declare():
    import pytest

    with pytest.raises(AttributeError):
        TimingReport().spedup = 2.0  # a misspelt field fails loudly, never silently lost


def test_the_timing_phase_uses_only_fields_its_report_declares():
    """Read from the source, so that the paths only a GPU takes are checked too."""
    import ast
    from pathlib import Path

    declared = {f.name for f in dataclasses.fields(TimingReport)} | {"append"}
    harness = Path(__file__).resolve().parents[1] / "harness" / "judge"
    used = {(path.name, node.attr) for path in (harness / "timing.py", harness / "timing_setup.py")
            for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Attribute)
            and ast.unparse(node.value) in ("r", "self.report", "pair.report")}
    assert used and {(name, attr) for name, attr in used if attr not in declared} == set()
