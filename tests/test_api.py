"""The library API (harness/runner/api.py): `from harness import evaluate`, a pair given as paths or as source text,
judged as run.py judges it, on the CPU."""
import pytest

from support import FAST_CONFIG, FIXTURES

RELU = FIXTURES / "problems" / "fx_relu.py"
HONEST = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0)
"""
WRONG = HONEST.replace("min=0.0", "min=0.1")


def test_a_pair_of_sources_and_paths_gets_run_pys_verdicts():
    from harness import evaluate, evaluate_many

    result = evaluate(RELU, HONEST, device="cpu", config=str(FAST_CONFIG))
    assert result.status == "correct" and result.speedup and result.device == "cpu", result.error
    problem = RELU.read_text()
    both = {r.status for r in evaluate_many([(problem, HONEST), (str(RELU), WRONG)], device="cpu",
                                            config=str(FAST_CONFIG))}
    assert both == {"correct", "incorrect"}


def test_the_run_is_kept_where_asked_and_removed_otherwise(tmp_path):
    from harness import evaluate

    result = evaluate(RELU, HONEST, device="cpu", config=str(FAST_CONFIG), sizes={"batch_size": 8}, out=tmp_path)
    assert result.overrides == {"batch_size": 8}
    assert (tmp_path / "run" / "results.jsonl").read_text().count("\n") == 1
    assert (tmp_path / "run" / "meta.json").exists()


def test_bad_input_is_a_clear_error():
    from harness import evaluate
    from harness.common.errors import UserError

    with pytest.raises(UserError, match="defines `ModelNew`"):
        evaluate(RELU, "print('no model here')", device="cpu")
    with pytest.raises(UserError, match="not found"):
        evaluate("missing/problem.py", HONEST, device="cpu")
    with pytest.raises(UserError, match="batchsize"):
        evaluate(RELU, HONEST, device="cpu", sizes={"batchsize": 8})
