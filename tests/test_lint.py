"""The problem lint (harness/judge/lint.py): a reference that ignores its inputs, or that zeros or a constant would pass, is
found before anyone benchmarks against it; one too large for the machine is not checked, with the sizes to shrink."""
from pathlib import Path

import pytest
import torch

from harness.judge import lint
from harness.common import problem_info
from harness.common.config import build_config

PROBLEM = '''
import torch
import torch.nn as nn

size = 4096

class Model(nn.Module):
    def forward(self, x):
        return {body}

def get_inputs():
    return [torch.randn(size)]

def get_init_inputs():
    return []
'''


def lint_of(tmp_path: Path, body: str, **overrides) -> dict:
    path = tmp_path / "problem.py"
    path.write_text(PROBLEM.format(body=body))
    return lint.lint_problem(path, torch.device("cpu"), overrides, build_config(None, {"device": "cpu"}))


def test_an_honest_problem_has_no_findings(tmp_path):
    assert lint_of(tmp_path, "torch.sigmoid(x) * 3") == {"findings": []}


def test_an_output_blind_to_its_inputs_is_found(tmp_path):
    findings = lint_of(tmp_path, "torch.ones_like(x) * 2")["findings"]
    assert findings[0] == lint.INPUT_BLIND
    assert "an output of a constant (the output's mean) would pass its tolerance" in findings


def test_an_output_that_depends_on_its_inputs_only_off_the_sample_is_not_called_blind(tmp_path):
    # nonzero only between the sampled elements (every 16th): KernelBench's level2 93, whose rare nonzero elements a
    # sample missed in one sweep of two, was flagged degenerate_problem then
    body = "torch.where(torch.arange(x.numel()) % 16 == 1, x, torch.zeros_like(x))"
    assert lint_of(tmp_path, body, size=1 << 20) == {"findings": []}


def test_an_output_that_zeros_would_pass_is_found(tmp_path):
    findings = lint_of(tmp_path, "x * 1e-9")["findings"]
    assert "an output of all zeros would pass its tolerance" in findings and lint.INPUT_BLIND not in findings


def test_a_problem_that_fails_is_a_finding_not_a_crash(tmp_path):
    findings = lint_of(tmp_path, "x.no_such_method()")["findings"]
    assert len(findings) == 1 and findings[0].startswith("cannot be run: AttributeError")


def test_a_problem_too_large_for_the_machine_is_not_checked_with_the_sizes_to_shrink(tmp_path, monkeypatch):
    monkeypatch.setattr(problem_info, "free_memory", lambda device: 1 << 20)  # a 1 MiB machine
    result = lint_of(tmp_path, "torch.sigmoid(x)", size=1 << 20)
    assert "findings" not in result and "shrink the problem with --set (its sizes: size=1048576)" in result["not_checked"]


def test_the_mean_is_taken_a_chunk_at_a_time():
    x = torch.randn(1000)
    assert lint.mean_of(x, chunk=64) == pytest.approx(float(x.double().mean()), abs=1e-12)
    assert lint.mean_of(torch.arange(5)) == 0.0  # integers: no constant to try but zero
