"""Console and CSV tables from results: contract columns, order, and the compare table."""
import pandas as pd
from rich.console import Console

from harness import gate, report
from harness.records import Result
from harness.verdict import Status


def results():
    return [Result(problem="relu", solution="slow", status=Status.CORRECT, speedup=0.8, speedup_ci_low=0.7,
                   speedup_ci_high=0.9, flags=["b", "a"]),
            Result(problem="relu", solution="broken", status=Status.COMPILE_ERROR, error="SyntaxError"),
            Result(problem="relu", solution="fast", status=Status.CORRECT, speedup=1.7, speedup_ci_low=1.6,
                   speedup_ci_high=1.8),
            Result(problem="gelu", solution="x", status=Status.TIMEOUT, error="no reply")]


def test_speedups_csv_has_the_contract_columns_sorted_fastest_first(tmp_path):
    report.write_tables(tmp_path, results())
    frame = pd.read_csv(tmp_path / "speedups.csv")
    assert list(frame.columns) == report.CSV_COLUMNS
    assert list(frame["solution"]) == ["x", "fast", "slow", "broken"]  # by problem, then speedup, failures last
    assert list(frame["status"]) == ["timeout", "correct", "correct", "compile_error"]
    assert frame.loc[2, "flags"] == "a;b"


def render(renderable) -> str:
    console = Console(width=200, record=True)
    console.print(renderable)
    return console.export_text()


def test_the_console_summary_counts_each_status(tmp_path):
    console = Console(width=200, record=True)
    report.print_summary(results(), tmp_path, console)
    text = console.export_text()
    assert "correct: 2" in text and "compile_error: 1" in text and "timeout: 1" in text
    assert "Status." not in text  # statuses print as their names


def test_the_compare_table_names_each_change():
    old = [Result(problem="relu", solution="fast", status=Status.CORRECT, speedup=1.2, speedup_ci_low=1.1,
                  speedup_ci_high=1.3)]
    new = [Result(problem="relu", solution="fast", status=Status.CORRECT, speedup=1.6, speedup_ci_low=1.5,
                  speedup_ci_high=1.7), Result(problem="relu", solution="new", status=Status.CRASH)]
    text = render(report.compare_table(gate.compare_runs(old, new)))
    assert "1.200 -> 1.600" in text and "faster" in text and "- -> crash" in text and "new" in text
