"""What a problem asks for, without running it: input shapes and bytes, output bytes and FLOPs, on torch's meta
device (no memory is allocated and nothing is computed). Used by `run.py list` and by the judge's memory check."""
from __future__ import annotations

import contextlib
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from harness.inputs import cast_floats, init_inputs, nbytes
from harness.load import load_module


def describe(path: Path, overrides: dict) -> dict:
    """{inputs: ["float32[16x256]", ...], input_bytes, flops} of one problem; {error} when that cannot be had."""
    try:
        module = load_module(Path(path).read_text(), path, "problem_info_module", overrides)
        counter = FlopCounterMode(display=False)
        inputs, _ = call_on_meta(module, counter)
        shapes = [f"{str(x.dtype).removeprefix('torch.')}[{'x'.join(map(str, x.shape))}]" if isinstance(x, torch.Tensor)
                  else repr(x) for x in inputs]
        return {"inputs": shapes, "input_bytes": nbytes(inputs), "flops": counter.get_total_flops()}
    except Exception as exc:  # a problem that cannot run on the meta device still gets listed
        return {"error": f"{type(exc).__name__}: {exc}"[:200]}


def call_on_meta(module, mode=None, dtype=None) -> tuple[list, object]:
    """The problem's inputs and its Model's output for them, as meta tensors (shapes and dtypes, no data); `mode`
    (a FlopCounterMode, say) is entered around the call; dtype (--precision) casts float inputs and the weights.
    Raises what the problem raises there."""
    with torch.device("meta"):
        inputs = list(module.get_inputs())
        model = module.Model(*init_inputs(module))
        if dtype is not None:
            inputs = cast_floats(inputs, dtype)
            model = model.to(dtype) if isinstance(model, torch.nn.Module) else model
        with mode or contextlib.nullcontext(), torch.no_grad():
            return inputs, model(*inputs)
