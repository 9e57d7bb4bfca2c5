"""Leaderboard, aggregates, summary and plots, and `run.py report`, from golden results (no judging)."""
import dataclasses
import json
import shutil
import subprocess
import sys
from xml.etree import ElementTree

import pandas as pd
import pytest

from support import GOLDEN, ROOT, golden_results
from harness.runner import boards


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


def test_the_docs_tables_of_columns_are_made_from_the_declarations():
    """docs/leaderboard.md holds both tables as the code makes them; every leaderboard column is a Result field or one
    the board derives (BOARD_ONLY)."""
    from harness.common import records

    docs = (ROOT / "docs" / "leaderboard.md").read_text()
    assert records.meanings_table("column", boards.LEADERBOARD_COLUMNS) in docs
    assert records.meanings_table("column", boards.AGGREGATE_COLUMNS) in docs
    fields = {f.name for f in dataclasses.fields(records.Result)}
    assert all(c in fields or c in boards.BOARD_ONLY for c in boards.LEADERBOARD_ORDER)
    assert set(boards.BOARD_ONLY) <= set(boards.LEADERBOARD_ORDER)


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
    assert compare.returncode == 0 and "same" in compare.stdout and "no pair got worse" in compare.stdout
    slower = tmp_path / "slower"
    slower.mkdir()
    rows = [json.loads(line) for line in (GOLDEN / "results.jsonl").read_text().splitlines()]
    for row in rows:
        if row["solution"] == "fast":
            row.update(speedup=0.128, speedup_ci_low=0.12, speedup_ci_high=0.14, flags=["noisy_timing"])
    (slower / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    compare = subprocess.run([sys.executable, "run.py", "compare", str(run), str(slower)], cwd=ROOT,
                             capture_output=True, text=True)
    assert compare.returncode == 1, compare.stdout + compare.stderr
    assert "worse: sigmoid/fast: slower: speedup 0.128" in " ".join(compare.stdout.split())


@pytest.mark.parametrize("board", sorted(p.name for p in (ROOT / "results" / "leaderboards").iterdir() if p.is_dir()))
def test_every_committed_board_is_what_report_makes_of_its_results(board, tmp_path):
    """`run.py report` on a copy of each committed board rewrites every table as it is committed, byte for byte: the
    boards are made by the current code, not left in an older schema (the plots, whose bytes are matplotlib's, are
    checked by test_files_match_the_golden_ones_and_plots_are_deterministic)."""
    committed = ROOT / "results" / "leaderboards" / board
    copy = tmp_path / board  # (the summary's title is the folder's name)
    shutil.copytree(committed, copy)
    out = subprocess.run([sys.executable, "run.py", "report", str(copy)], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    tables = [p.name for p in committed.iterdir() if p.suffix in (".csv", ".md", ".json", ".jsonl")]
    assert "leaderboard.csv" in tables and "summary.md" in tables
    for name in tables:
        assert (copy / name).read_bytes() == (committed / name).read_bytes(), f"{board}/{name}: run `python run.py report results/leaderboards/{board}`"


def test_the_summary_says_which_correct_pairs_fast_p_leaves_out(tmp_path):
    """fast_p counts speedups that are measurements: a correct pair flagged noisy_timing is left out of it (and of the
    geomean), and summary.md says so, with the flag (fast_0 below correct / problems is then explained)."""
    boards.write_boards(tmp_path, golden_results())
    summary = " ".join((tmp_path / "summary.md").read_text().split())
    assert "fast_p and the geomean count only speedups that are measurements: 1 correct pair(s) left out (noisy_timing)" \
        in summary


def test_plots_name_the_device_precision_and_sizes():
    board = boards.leaderboard(golden_results())
    assert boards.measured_where(board) == "NVIDIA H100 80GB HBM3; fp32; sizes as the problems set them"
    board.loc[:, "gpu"], board.loc[:, "sizes"] = None, "batch_size=32 dim=2048"
    assert boards.measured_where(board) == "CPU; fp32; sizes batch_size=32 dim=2048"
