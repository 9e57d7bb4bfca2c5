"""Problem lint: a reference that ignores its inputs, or that zeros or a constant would pass, is reported
before anyone benchmarks against it. Usage: python -m harness.judge.lint PROBLEM.py DEVICE [NAME=VALUE ...]

Prints one JSON object: {"problem": ..., "findings": [...]} or {"problem": ..., "not_checked": why}. Imports the
problem only (trusted code).
"""
from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path
from typing import Optional

import torch

from harness.common import check, inputs as inputs_mod, problem_info, semantics
from harness.common.devices import torch_device
from harness.common.config import Config, build_config, tolerance_for
from harness.common.discover import parse_set
from harness.common.load import load_module


def lint_problem(path: Path, device: torch.device, overrides: dict, cfg: Config) -> dict:
    """{"findings": [...]} (what is wrong with the problem as a benchmark), or {"not_checked": why}."""
    try:
        source = path.read_text()
        problem = load_module(source, path, "problem_module", overrides)
        # (the lint holds less than a pair: the host's rule leaves room on a GPU too)
        shortfall = problem_info.memory_shortfall(problem_info.sizes(problem), source, overrides,
                                                  problem_info.free_memory(device))
        if shortfall:
            return {"not_checked": shortfall}
        model = semantics.build_model(problem.Model, inputs_mod.init_inputs(problem), cfg.correctness.init_seed, device,
                                      cfg.mode)
        secret, problem_check = secrets.randbits(63), ProblemCheck(cfg, path.stem)
        for trial in range(2):
            inputs = inputs_mod.make_inputs(problem, inputs_mod.trial_seed(secret, path.stem, trial), device, None)
            outputs = check.items(semantics.call(model, inputs, inputs_mod.trial_seed(secret, "call", trial)))
            del inputs
            problem_check.see(outputs)
            del outputs
    except Exception as exc:
        return {"findings": [f"cannot be run: {type(exc).__name__}: {exc}"]}
    return {"findings": problem_check.findings}


INPUT_BLIND = "its output does not depend on its inputs (two input draws gave the same bits)"


class ProblemCheck:
    """Would zeros or a constant pass the first draw's outputs, does the second draw's equal them?"""

    def __init__(self, cfg: Config, problem: str):
        self.cfg, self.problem = cfg, problem
        self.findings: list[str] = []  # what is wrong
        self.first: Optional[list] = None  # the first outputs' fingerprints

    def see(self, outputs: list) -> None:
        """The outputs of the next draw (the first two count)."""
        if self.first is None:
            self.findings = fake_outputs_passing(outputs, self.cfg, self.problem)
            self.first = [check.output_fingerprint(x) for x in outputs]
        elif [check.output_fingerprint(x) for x in outputs] == self.first and INPUT_BLIND not in self.findings:
            self.findings.insert(0, INPUT_BLIND)


def fake_outputs_passing(outputs: list, cfg: Config, problem: str) -> list[str]:
    """Findings: an output of zeros, or of one constant (the output's mean), would pass the tolerance."""
    findings = []
    for label, value in (("all zeros", lambda ref: 0.0), ("a constant (the output's mean)", mean_of)):
        if outputs and all(would_pass(ref, value(ref), cfg, problem) for ref in outputs):
            findings.append(f"an output of {label} would pass its tolerance")
    return findings


def mean_of(ref: torch.Tensor, chunk: int = 1 << 24) -> float:
    """A float output's mean in float64, a chunk at a time (docs/decisions/memory-budget.md)."""
    if not ref.is_floating_point() or not ref.numel():
        return 0.0
    total = sum(piece.sum(dtype=torch.float64) for _, piece in check.slices(ref, chunk))
    return float(total) / ref.numel()


def would_pass(ref: torch.Tensor, value: float, cfg: Config, problem: str) -> bool:
    tol = tolerance_for(cfg, problem, str(ref.dtype).removeprefix("torch."))
    return check.constant_would_pass(ref, value, tol["atol"], tol["rtol"], cfg.correctness.compare_chunk_elems)


def main(argv: list) -> None:
    path, device, overrides = Path(argv[0]), torch_device(argv[1]), parse_set(argv[2:])
    print(json.dumps({"problem": path.stem, **lint_problem(path, device, overrides, build_config(None, {}))}))


if __name__ == "__main__":
    main(sys.argv[1:])
