"""Console and CSV tables from results: contract columns, order, and the compare table."""
import pandas as pd
from rich.console import Console

from harness.runner import gate, report
from harness.common.records import Result
from harness.common.verdict import Status


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


def test_a_finished_pair_in_a_few_words():
    tie = Result(problem="p", solution="a", status=Status.CORRECT, speedup=1.001, speedup_ci_low=0.99,
                 speedup_ci_high=1.01, tie=True)
    assert report.outcome(tie) == "correct, tie 1.001 [0.990, 1.010]"
    noisy = Result(problem="p", solution="b", status=Status.CORRECT, speedup=1.3, speedup_ci_low=1.1,
                   speedup_ci_high=1.5, flags=["noisy_timing", "no_custom_kernel"])
    assert report.outcome(noisy) == "correct, 1.300 [1.100, 1.500] (noisy_timing)"
    wrong = Result(problem="p", solution="c", status=Status.INCORRECT, error="trial 2/7: 3 of 9 elements outside")
    assert report.outcome(wrong) == "incorrect: trial 2/7: 3 of 9 elements outside"


def test_a_skip_reason_is_shown_whole_with_its_advice():
    reason = ("needs over 36.0 GiB of memory (inputs 6.0 GiB, output 6.0 GiB, each held 3 times over or more), "
              "23.0 GiB available here: shrink the problem with --set (its sizes: batch_size=4096, dim=393216)")
    skipped = Result(problem="sigmoid", solution="s", status=Status.SKIPPED, error=reason)
    out = Console(width=400, record=True)
    out.print(report.console_table([skipped], "t"))
    assert "batch_size=4096, dim=393216)" in " ".join(out.export_text().split())


def test_an_empty_plot_says_why(monkeypatch):
    from harness.runner import boards

    said = []
    monkeypatch.setattr(boards, "say_empty", lambda ax: said.append(ax))
    board = boards.leaderboard([Result(problem="p", solution="w", status=Status.INCORRECT, error="wrong")])
    boards.plot_speedups(board)
    boards.plot_roofline(board)
    assert len(said) == 2
