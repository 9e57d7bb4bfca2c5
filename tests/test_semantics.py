"""KernelBench's reference semantics, judged end to end on the CPU: modules as constructed (training mode), each side's
own weights (the reference's copied only as a second attempt), accuracy against float64, wide trials that keep the
problem's structure, seeded random references, degenerate problems flagged, and --mode eval."""
import json
import subprocess
import sys

import pandas as pd
import pytest
import torch

from support import FAST_CONFIG, FIXTURES, ROOT
from harness.runner import boards, gate
from harness.common import semantics
from harness.common.records import Result

DEFAULT_MODE = {
    ("fx_naive_variance", "accumulates_in_float64"), ("fx_naive_variance", "doubles_the_variance"),
    ("fx_conv_bn", "batch_statistics"), ("fx_conv_bn", "fused_eval_path"), ("fx_conv_bn", "folds_running_stats"),
    ("fx_conv_bn", "uses_running_stats"),
    ("fx_linear_scale", "prescaled_weights"), ("fx_linear_scale", "draws_in_another_order"),
    ("fx_linear_scale", "wrong_in_any_order"), ("fx_linear_scale", "uses_problem_globals"),
    ("fx_symmetric_matmul", "uses_the_symmetry"), ("fx_dropout", "same_dropout"), ("fx_dropout", "skips_dropout"),
    ("fx_constant", "returns_ones"), ("fx_unseeded_inputs", "same_as_reference"),
}
EVAL_MODE = {("fx_conv_bn", "batch_statistics"), ("fx_conv_bn", "fused_eval_path"), ("fx_conv_bn", "folds_running_stats")}


def judge(pairs: set, out, *extra: str) -> dict:
    """The pairs judged in one run.py on the CPU: {(problem, solution): record}."""
    out.mkdir()
    manifest = out / "pairs.csv"
    manifest.write_text("problem,candidate\n" + "".join(
        f"{FIXTURES / 'problems' / problem}.py,{FIXTURES / 'solutions' / problem / solution}.py\n"
        for problem, solution in sorted(pairs)))
    proc = subprocess.run([sys.executable, "run.py", "--manifest", str(manifest), "--device", "cpu", "--config",
                           str(FAST_CONFIG), "--out", str(out / "run"), *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = map(json.loads, (out / "run" / "results.jsonl").read_text().splitlines())
    return {(r["problem"], r["solution"]): r for r in records}


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    return judge(DEFAULT_MODE, tmp_path_factory.mktemp("default") / "d")


@pytest.fixture(scope="module")
def judged_in_eval_mode(tmp_path_factory):
    return judge(EVAL_MODE, tmp_path_factory.mktemp("eval") / "e", "--mode", "eval")


def test_a_candidate_more_accurate_than_the_reference_is_correct(judged):
    better = judged[("fx_naive_variance", "accumulates_in_float64")]
    assert better["status"] == "correct" and "accurate_vs_fp64" in better["flags"], better["error"]
    assert better["new_err_vs_fp64"] < 0.01 < 1 < better["ref_err_vs_fp64"]  # in tolerances
    other = judged[("fx_naive_variance", "doubles_the_variance")]
    assert other["status"] == "incorrect" and "against float64 its worst error is" in other["error"], other["error"]


def test_batchnorm_runs_in_training_mode_as_kernelbench_runs_it(judged):
    assert judged[("fx_conv_bn", "batch_statistics")]["status"] == "correct"
    assert judged[("fx_conv_bn", "fused_eval_path")]["status"] == "correct"  # its eval-only path is never taken
    folded = judged[("fx_conv_bn", "folds_running_stats")]
    assert folded["status"] == "incorrect" and folded["mode"] == "constructed", folded["error"]


def test_eval_mode_draws_batchnorm_statistics_so_folding_them_is_tested(judged_in_eval_mode):
    assert judged_in_eval_mode[("fx_conv_bn", "folds_running_stats")]["status"] == "correct"
    assert judged_in_eval_mode[("fx_conv_bn", "batch_statistics")]["status"] == "correct"  # its eval path: self.bn
    unfinished = judged_in_eval_mode[("fx_conv_bn", "fused_eval_path")]
    assert unfinished["status"] == "incorrect" and "shape" in unfinished["error"]
    assert unfinished["mode"] == "eval"


def test_the_candidate_keeps_its_own_weights(judged):
    prescaled = judged[("fx_linear_scale", "prescaled_weights")]
    assert prescaled["status"] == "correct" and "weights_copied" not in prescaled["flags"], prescaled["error"]
    reordered = judged[("fx_linear_scale", "draws_in_another_order")]
    assert reordered["status"] == "correct" and "weights_copied" in reordered["flags"], reordered["error"]
    wrong = judged[("fx_linear_scale", "wrong_in_any_order")]  # the verdict and its figures are the first attempt's
    assert wrong["status"] == "incorrect" and wrong["trials"] is None and wrong["new_err_vs_fp64"] > 1
    assert any(note.startswith("tried again with the reference's weights") for note in wrong["notes"]), wrong["notes"]


def test_the_candidate_runs_in_the_problem_files_namespace_as_in_kernelbench(judged):
    reader = judged[("fx_linear_scale", "uses_problem_globals")]
    assert reader["status"] == "correct", reader["error"]


def test_running_statistics_moved_by_the_reference_are_no_weights_to_copy(judged):
    stale = judged[("fx_conv_bn", "uses_running_stats")]
    assert stale["status"] == "incorrect" and stale["new_err_vs_fp64"] > 1, stale["error"]
    assert not stale["notes"]  # no second attempt: the reference's weights are its own


def test_wide_trials_keep_the_documented_symmetry(judged):
    symmetric = judged[("fx_symmetric_matmul", "uses_the_symmetry")]
    assert symmetric["status"] == "correct" and symmetric["trials"] == 3, symmetric["error"]


def test_inputs_that_ignore_the_seed_get_no_float64_truth_and_say_so(judged):
    """The truth is computed from a first draw of the trial's inputs (nothing else of the trial on the device then), the
    trial runs on a second draw: where get_inputs() ignores the seed the two differ, and no truth is claimed."""
    record = judged[("fx_unseeded_inputs", "same_as_reference")]
    assert record["status"] == "correct", record["error"]
    assert record["ref_err_vs_fp64"] is None and record["new_err_vs_fp64"] is None
    assert "no float64 truth: get_inputs() gave other inputs under the same seed" in record["notes"]
    assert judged[("fx_naive_variance", "accumulates_in_float64")]["new_err_vs_fp64"] is not None  # a seeded one's


def test_a_random_reference_is_matched_by_the_same_draws(judged):
    same = judged[("fx_dropout", "same_dropout")]
    assert same["status"] == "correct", same["error"]
    assert any("draws random numbers" in note for note in same["notes"]) and same["timed_outputs_checked"] == 0
    assert same["ref_err_vs_fp64"] is None  # no float64 truth for a random reference
    assert judged[("fx_dropout", "skips_dropout")]["status"] == "incorrect"


def test_a_degenerate_problem_is_flagged_shown_unranked_and_fails_the_gate(judged, tmp_path):
    ones = judged[("fx_constant", "returns_ones")]
    assert ones["status"] == "correct" and "degenerate_problem" in ones["flags"]
    assert any("does not depend on its inputs" in f for f in ones["problem_findings"])
    sound = [r for key, r in judged.items() if key[0] != "fx_constant"]
    assert not any("degenerate_problem" in r["flags"] for r in sound)
    result = Result.from_dict(ones)
    row = boards.leaderboard([result]).iloc[0]
    assert pd.isna(row["rank"]) and "degenerate_problem" in row["reason"] and "inputs" in row["reason"]
    assert ("fx_constant", "returns_ones") in gate.gate_failures([result])


def test_eval_mode_draws_the_same_batchnorm_statistics_on_both_sides():
    first, second = (semantics.build_model(torch.nn.BatchNorm1d, [4], 42, torch.device("cpu"), "eval")
                     for _ in range(2))
    assert not first.training and torch.equal(first.running_var, second.running_var)
    assert not torch.equal(first.running_var, torch.ones(4)) and not torch.equal(first.weight, torch.ones(4))
    fresh = semantics.build_model(torch.nn.BatchNorm1d, [4], 42, torch.device("cpu"))
    assert fresh.training and torch.equal(fresh.running_var, torch.ones(4))  # as constructed: untouched


def test_random_draws_are_seen_and_seeded_calls_repeat_them():
    model = torch.nn.Dropout(0.5)
    x = torch.ones(1000)
    with semantics.RandomDraws(torch.device("cpu"), 3) as draws:
        first = semantics.call(model, [x])
    assert draws.drawn and torch.equal(first, semantics.call(model, [x], 3))
    with semantics.RandomDraws(torch.device("cpu"), 3) as draws:
        semantics.call(torch.nn.ReLU(), [x])
    assert not draws.drawn


class _Recurrent(torch.nn.Module):
    """v0's VanillaRNN in small: a plain tensor attribute advanced each call, beside a BatchNorm."""

    def __init__(self):
        super().__init__()
        self.hidden = torch.randn(2, 3)
        self.i2h = torch.nn.Linear(6, 3)
        self.norm = torch.nn.BatchNorm1d(3)

    def forward(self, x):
        self.hidden = torch.tanh(self.i2h(torch.cat((x, self.hidden), dim=1)))
        return self.norm(self.hidden)


def test_state_is_what_a_forward_changes_and_reads_and_it_restores():
    torch.manual_seed(0)
    model, x = _Recurrent(), torch.randn(2, 3)
    assert list(semantics.state_tensors(model)) == [("", "hidden")]  # no parameters, no running statistics
    before, saved = semantics.state_fingerprint(model), semantics.model_state(model)
    with torch.no_grad():
        first = model(x)
        assert semantics.state_fingerprint(model) != before
        assert not torch.equal(model(x), first)  # the next output depends on the state
        semantics.restore_state(model, saved)
        assert torch.equal(model(x), first)
        truth = semantics.call(copy_double(model, saved), [x.double()])
    assert truth.dtype == torch.float64 and torch.allclose(truth.float(), first, atol=1e-5)


def copy_double(model, saved):
    import copy

    twin = copy.deepcopy(model).double()
    semantics.restore_state(twin, saved, torch.float64)
    return twin
