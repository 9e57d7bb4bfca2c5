"""The command line: exit codes, messages, and whole runs on the CPU."""
import json
import subprocess
import sys

import pandas as pd
import pytest

from support import FAST_CONFIG, FIXTURES, ROOT, cuda_available

RELU = str(FIXTURES / "problems" / "fx_relu.py")
RELU_SOLUTIONS = FIXTURES / "solutions" / "fx_relu"


def run_cli(*args, timeout=600):
    return subprocess.run([sys.executable, "run.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def records(run_dir):
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("args, message", [
    (["--problem", "sigmod"], "Unknown problem 'sigmod'. Did you mean 'sigmoid'?"),
    (["--problem", "sigmoid", "--set", "dimm=3"], "has no module constant 'dimm'"),
    (["--problem", "sigmoid", "--set", "dim"], "Bad --set"),
    (["--problem", "sigmoid", "--set", "batch_size=-5"], "problem 'sigmoid' does not run with it: RuntimeError"),
    (["--problem", "sigmoid", "--solution", "missing.py"], "Solution file not found"),
    (["--problem", str(FIXTURES / "problems" / "fx_no_model.py")], "missing or empty"),
    (["--problem", "no/such/dir/"], "Problem file not found"),
    (["--problem", "sigmoid", "--config", "missing.yaml"], "Config file not found"),
    (["--problem", "sigmoid", "--device", "tpu"], "expected auto, cpu, cuda"),
    (["--problem", "sigmoid", "--min-speedup", "2"], "--min-speedup needs --gate"),
    (["--problem", "sigmoid", "--resume"], "--resume needs --out"),
    (["--problem", "sigmoid", "--baseline", "board.csv"], "--baseline needs --gate"),
    (["--problem", "sigmoid", "--gate", "--baseline", "no/such/board.csv"], "no such file"),
    (["--problem", "sigmoid", "--gate", "--baseline", "requirements.txt"], "not a leaderboard.csv"),
    (["report", "tests/fixtures/reports", "--gate", "--baseline", "requirements.txt"], "not a leaderboard.csv"),
    (["report", "tests/fixtures/reports", "--gate", "--baseline", "README.md"], "--baseline README.md"),
])
def test_usage_errors_exit_2_with_a_message(args, message):
    out = run_cli(*args)
    assert out.returncode == 2, out.stderr
    assert message in " ".join(out.stderr.split())
    assert "Traceback" not in out.stderr


@pytest.mark.skipif(cuda_available(), reason="checks the no-GPU message")
def test_device_cuda_without_gpu_is_a_clear_error():
    out = run_cli("--problem", "sigmoid", "--device", "cuda")
    assert out.returncode == 2 and "no CUDA GPU is visible" in " ".join(out.stderr.split())


def test_help_lists_the_contract():
    out = run_cli("--help")
    for flag in ("--problem", "--solution", "--device", "--set", "--config", "--timeout", "--out", "--resume", "--gate"):
        assert flag in out.stdout


def test_gate_resume_and_report(tmp_path):
    run_dir = tmp_path / "run"
    base = ["--problem", RELU, "--device", "cpu", "--config", str(FAST_CONFIG), "--out", str(run_dir)]
    good = ["--solution", str(RELU_SOLUTIONS / "correct_torch.py")]
    bad = ["--solution", str(ROOT / "tests" / "adversarial" / "cpu" / "wrong_values.py")]
    assert run_cli(*base, *good, "--gate").returncode == 0
    assert run_cli(*base, *good, *bad, "--resume").returncode == 0  # runs only the new pair
    lines = records(run_dir)
    assert [r["solution"] for r in lines] == ["correct_torch", "wrong_values"]
    assert run_cli(*base, *good, *bad, "--resume", "--gate").returncode == 1  # nothing rerun; gate fails
    assert len(records(run_dir)) == 2
    assert run_cli(*base, *good, "--resume", "--gate", "--min-speedup", "1000").returncode == 1
    # The run's own leaderboard as a baseline: the same numbers are no regression, a faster record is. A speedup
    # from noisy rounds claims nothing, so the gate fails it against any baseline; this host's noise is not what
    # is tested here, so the record is made a steady one (the gate reads results.jsonl; nothing is rerun).
    steady = [{**r, "flags": [f for f in r["flags"] if f != "noisy_timing"]} for r in records(run_dir)]
    (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in steady))
    assert run_cli("report", str(run_dir)).returncode == 0  # the leaderboard of those records
    board = run_dir / "leaderboard.csv"
    junit = tmp_path / "junit.xml"
    assert run_cli(*base, *good, "--resume", "--gate", "--baseline", str(board), "--junit", str(junit)).returncode == 0
    assert 'failures="0"' in junit.read_text() and 'name="correct_torch"' in junit.read_text()
    faster = tmp_path / "faster.csv"
    frame = pd.read_csv(board)
    frame.loc[frame.candidate == "correct_torch", ["speedup", "speedup_ci_low", "speedup_ci_high"]] = [50.0, 49.0, 51.0]
    frame.to_csv(faster, index=False)
    assert run_cli(*base, *good, "--resume", "--gate", "--baseline", str(faster)).returncode == 1
    written = {n: (run_dir / n).read_bytes() for n in ("speedups.csv", "leaderboard.csv", "aggregates.csv", "summary.md")}
    for name in written:
        (run_dir / name).unlink()
    report = run_cli("report", str(run_dir))
    assert report.returncode == 0
    assert {n: (run_dir / n).read_bytes() for n in written} == written  # rebuilt from results.jsonl, same bytes
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["device"] == "cpu" and meta["config"]["trials"] == 2
    modes = {path.name: oct(path.stat().st_mode & 0o777) for path in run_dir.iterdir() if path.is_file()}
    assert len(set(modes.values())) == 1, modes  # every file of a run written with the same mode
    assert not list((run_dir / "logs").glob("judge-factory-*.log"))  # an empty factory log is not kept


def test_broken_problem_gets_a_status_not_a_traceback(tmp_path):
    out = run_cli("--problem", str(FIXTURES / "problems" / "fx_no_model.py"), "--solution",
                  str(RELU_SOLUTIONS / "correct_torch.py"), "--device", "cpu", "--config", str(FAST_CONFIG),
                  "--out", str(tmp_path))
    assert out.returncode == 0
    (result,) = records(tmp_path)
    assert result["status"] == "harness_error" and "the problem failed, not the candidate" in result["error"]
    assert "Model" in result["error"]


def test_a_problem_whose_inputs_fail_is_the_problems_failure_not_the_candidates(tmp_path):
    out = run_cli("--problem", str(FIXTURES / "problems" / "fx_broken_inputs.py"), "--solution",
                  str(RELU_SOLUTIONS / "correct_torch.py"), "--device", "cpu", "--config", str(FAST_CONFIG),
                  "--out", str(tmp_path), "--gate")
    assert out.returncode == 3, out.stderr  # the run cannot vouch for the pair either way
    (result,) = records(tmp_path)
    assert result["status"] == "harness_error" and "the problem failed, not the candidate: get_inputs()" in result["error"]


def test_out_must_be_a_folder_and_results_there_need_resume(tmp_path):
    base = ["--problem", RELU, "--solution", str(RELU_SOLUTIONS / "correct_torch.py"), "--device", "cpu"]
    afile = tmp_path / "afile"
    afile.write_text("x")
    out = run_cli(*base, "--out", str(afile))
    assert out.returncode == 2 and "is a file, not a folder" in out.stderr and "Traceback" not in out.stderr
    assert out.stderr.strip().count("\n") == 0  # one line, however long the path
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.jsonl").write_text('{"problem": "fx_relu"}\n')
    out = run_cli(*base, "--out", str(tmp_path / "run"))
    message = " ".join(out.stderr.split())
    assert out.returncode == 2 and "already holds a run (1 result(s)): add --resume" in message and "another --out" in message


def test_runs_started_in_the_same_second_get_folders_of_their_own(tmp_path):
    from harness.runner import cli

    folders = {cli.new_run_dir(tmp_path, ["sigmoid"]) for _ in range(3)}
    assert len(folders) == 3 and all(f.is_dir() and f.parent == tmp_path for f in folders)


def test_list_shows_problems_and_candidates():
    out = run_cli("list")
    assert out.returncode == 0 and "sigmoid" in out.stdout and "cpp_parallel.py" in out.stdout


def test_report_without_results_is_an_error(tmp_path):
    assert run_cli("report", str(tmp_path)).returncode == 2


def test_the_console_shows_each_running_pairs_stage_and_a_stall():
    import io
    import time
    from types import SimpleNamespace

    from rich.console import Console

    from harness.runner.cli import RunView, StallReporter

    view = RunView(total=3)
    pair = SimpleNamespace(problem="sigmoid", solution="slow")
    view.stage(pair, "correctness")
    (row,) = view.rows()
    assert row[:2] == ("sigmoid/slow", "correctness") and row[2] >= 0
    out = io.StringIO()
    view.running[("sigmoid", "slow")][1:] = [time.monotonic() - 90, time.monotonic() - 100]  # began 90 s ago
    with StallReporter(view, Console(file=out, width=200), every_s=0.05):
        time.sleep(0.5)
    assert out.getvalue() == "  sigmoid/slow: in stage 'correctness' for 90 s (100 s in all; 0/3 pairs done)\n"
    view.end(pair)
    assert view.rows() == [] and view.done == 1


def test_progress_estimates_the_time_left_from_the_pairs_this_run_judged():
    from types import SimpleNamespace

    from harness.runner.cli import RunView

    view = RunView(total=5)
    assert view.estimate() == ""
    assert view.end(SimpleNamespace(problem="p", solution="recorded")) is False  # --resume: not judged here
    assert view.estimate() == ""  # no pace yet
    skipped = SimpleNamespace(problem="p", solution="skipped")
    view.stage(skipped, "queued")
    assert view.end(skipped) is True and view.estimate() == ""  # ended without a judge: no pace from it
    judged = SimpleNamespace(problem="p", solution="judged")
    view.stage(judged, "timing")
    view.first_start -= 60  # it took a minute
    assert view.end(judged) is True
    assert view.estimate() == ""  # one pair says little of the next (four instant skips were said to need ~4 min)
    second = SimpleNamespace(problem="p", solution="second")
    view.stage(second, "timing")
    view.first_start -= 60  # another minute
    assert view.end(second) is True
    assert view.estimate() == ", ~60 s left"  # one pair left at a minute each


def test_the_github_step_summary_names_its_plots_and_gives_the_gates_verdict(tmp_path):
    """GitHub's step summary cannot show the run's files: plots are named, not linked; the gate's lines close it."""
    import os
    import shutil

    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(FIXTURES / "reports" / "results.jsonl", run / "results.jsonl")
    summary = tmp_path / "step.md"
    out = subprocess.run([sys.executable, "run.py", "report", str(run), "--gate"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, env={**os.environ, "GITHUB_STEP_SUMMARY": str(summary)})
    assert out.returncode == 1, out.stderr
    text = summary.read_text()
    assert "](speedups.png)" not in text and "`speedups.png` in the run's folder" in text
    assert "gate: sigmoid/broken: compile_error" in text and "gate: FAILED (3 of 8 pair(s) failing)" in text


def test_a_gate_against_a_baseline_made_at_other_sizes_says_not_comparable(tmp_path):
    """The committed-board case on the CPU: a run gated against a board row of other sizes is never called slower; it
    is listed as not comparable (exit 0), and --fail-on-no-baseline fails it (exit 1)."""
    import csv

    run = tmp_path / "run"
    run.mkdir()
    rows = [json.loads(line) for line in (FIXTURES / "reports" / "results.jsonl").read_text().splitlines()]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows if r["status"] == "correct"))
    assert run_cli("report", str(run)).returncode == 0
    board = list(csv.DictReader(open(run / "leaderboard.csv")))
    for row in board:
        row.update(sizes="batch_size=16 dim=1024", speedup="9", speedup_ci_low="8.9", speedup_ci_high="9.1")
    baseline = tmp_path / "board.csv"
    with open(baseline, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(board[0]))
        writer.writeheader()
        writer.writerows(board)
    gated = run_cli("report", str(run), "--gate", "--baseline", str(baseline))
    said = " ".join(gated.stderr.split())
    assert gated.returncode == 0, said
    assert ("gate: sigmoid/fast: not compared with the baseline: not comparable: sizes batch_size=16 dim=1024 vs the "
            "problem's own") in said and "slower" not in said
    strict = run_cli("report", str(run), "--gate", "--baseline", str(baseline), "--fail-on-no-baseline")
    assert strict.returncode == 1 and "--fail-on-no-baseline" in strict.stderr
