"""Problem lint: a reference that ignores its inputs, or that zeros or a constant would pass, is reported
before anyone benchmarks against it. Usage: python -m harness.lint PROBLEM.py DEVICE [NAME=VALUE ...]

Prints one JSON object: {"problem": ..., "findings": [...]}. Imports the problem only (trusted code).
"""
from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path

import torch

from harness import check, inputs as inputs_mod, semantics
from harness.config import build_config, tolerance_for
from harness.discover import parse_set
from harness.load import load_module


def lint_problem(path: Path, device: torch.device, overrides: dict, cfg: dict) -> list[str]:
    """What is wrong with a problem as a benchmark; an empty list when nothing is."""
    try:
        problem = load_module(path.read_text(), str(path), "problem_module", overrides)
        model = semantics.build_model(problem.Model, inputs_mod.init_inputs(problem), cfg["init_seed"], device,
                                      cfg["mode"])
        secret = secrets.randbits(63)
        outs = []
        for trial in range(2):
            inputs = inputs_mod.make_inputs(problem, inputs_mod.trial_seed(secret, path.stem, trial), device, None)
            outs.append(check.items(semantics.call(model, inputs, inputs_mod.trial_seed(secret, "call", trial))))
    except Exception as exc:
        return [f"cannot be run: {type(exc).__name__}: {exc}"]
    findings = fake_outputs_passing(outs[0], cfg, path.stem)
    if input_blind(outs[0], outs[1]):
        findings.insert(0, INPUT_BLIND)
    return findings


INPUT_BLIND = "its output does not depend on its inputs (two input draws gave the same bits)"


def input_blind(first: list, second: list) -> bool:
    """Did two input draws give the same outputs (by fingerprint: no second copy of a large output)?"""
    return [check.fingerprint(a) for a in first] == [check.fingerprint(b) for b in second]


def fake_outputs_passing(outputs: list, cfg: dict, problem: str) -> list[str]:
    """Findings: an output of zeros, or of one constant (the output's mean), would pass the tolerance."""
    findings = []
    for label, value in (("all zeros", lambda ref: 0.0), ("a constant (the output's mean)", mean_of)):
        if outputs and all(would_pass(ref, value(ref), cfg, problem) for ref in outputs):
            findings.append(f"an output of {label} would pass its tolerance")
    return findings


def mean_of(ref: torch.Tensor) -> float:
    return ref.mean(dtype=torch.float64).item() if ref.is_floating_point() and ref.numel() else 0.0


def would_pass(ref: torch.Tensor, value: float, cfg: dict, problem: str) -> bool:
    tol = tolerance_for(cfg, problem, str(ref.dtype).removeprefix("torch."))
    return check.constant_would_pass(ref, value, tol["atol"], tol["rtol"], cfg["compare_chunk_elems"])


def main(argv: list) -> None:
    path, device, overrides = Path(argv[0]), torch.device(argv[1]), parse_set(argv[2:])
    findings = lint_problem(path, device, overrides, build_config(None, {}))
    print(json.dumps({"problem": path.stem, "findings": findings}))


if __name__ == "__main__":
    main(sys.argv[1:])
