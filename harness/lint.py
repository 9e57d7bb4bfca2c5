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

from harness import check, inputs as inputs_mod
from harness.config import build_config, tolerance_for
from harness.discover import parse_set
from harness.load import load_module


def lint_problem(path: Path, device: torch.device, overrides: dict, cfg: dict) -> list[str]:
    """What is wrong with a problem as a benchmark; an empty list when nothing is."""
    try:
        problem = load_module(path.read_text(), str(path), "problem_module", overrides)
        torch.manual_seed(cfg["init_seed"])
        with torch.device(device):
            model = problem.Model(*inputs_mod.init_inputs(problem))
        model = model.to(device).eval()
        secret = secrets.randbits(63)
        outs = []
        for trial in range(2):
            inputs = inputs_mod.make_inputs(problem, inputs_mod.trial_seed(secret, path.stem, trial), device, None)
            with torch.no_grad():
                outs.append(model(*inputs))
    except Exception as exc:
        return [f"cannot be run: {type(exc).__name__}: {exc}"]
    findings = []
    first, second = check.items(outs[0]), check.items(outs[1])
    if all(check.same_bits(a, b) for a, b in zip(first, second)):
        findings.append("its output does not depend on its inputs (two input draws gave the same bits)")
    for label, fake in (("all zeros", torch.zeros_like), ("a constant (the output's mean)", constant_like)):
        if all(passes(ref, fake(ref), cfg, path.stem) for ref in first):
            findings.append(f"an output of {label} would pass its tolerance")
    return findings


def constant_like(ref: torch.Tensor) -> torch.Tensor:
    return torch.full_like(ref, ref.double().mean().item() if ref.is_floating_point() else 0)


def passes(ref: torch.Tensor, fake: torch.Tensor, cfg: dict, problem: str) -> bool:
    if not ref.is_floating_point():
        return bool(torch.equal(ref, fake))
    tol = tolerance_for(cfg, problem, str(ref.dtype).removeprefix("torch."))
    return check.compare(ref, fake, tol["atol"], tol["rtol"], cfg["compare_chunk_elems"]).ok


def main(argv: list) -> None:
    path, device, overrides = Path(argv[0]), torch.device(argv[1]), parse_set(argv[2:])
    findings = lint_problem(path, device, overrides, build_config(None, {}))
    print(json.dumps({"problem": path.stem, "findings": findings}))


if __name__ == "__main__":
    main(sys.argv[1:])
