"""What a problem asks for, found on torch's meta device without running it, and whether this machine can hold it
(`run.py list`, the judge's memory check, the lint)."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch
from torch.utils.flop_counter import FlopCounterMode

from harness.common.discover import module_constants
from harness.common.inputs import cast_floats, init_inputs, nbytes
from harness.common.load import load_module


def describe(path: Path, overrides: dict) -> dict:
    """{inputs, input_bytes, flops} of one problem; {error} when that cannot be had."""
    try:
        module = load_module(Path(path).read_text(), path, "problem_info_module", overrides)
        counter = FlopCounterMode(display=False)
        inputs, _ = call_on_meta(module, counter)
        shapes = [f"{str(x.dtype).removeprefix('torch.')}[{'x'.join(map(str, x.shape))}]" if isinstance(x, torch.Tensor)
                  else repr(x) for x in inputs]
        return {"inputs": shapes, "input_bytes": nbytes(inputs), "flops": counter.get_total_flops()}
    except Exception as exc:  # listed even where the meta device fails
        return {"error": f"{type(exc).__name__}: {exc}"[:200]}


def call_on_meta(module, mode=None, dtype=None) -> tuple[list, object]:
    """The problem's meta inputs and output, called under `mode` (a FlopCounterMode) in `dtype`; raises as it does."""
    inputs, _, out = run_on_meta(module, mode, dtype)
    return inputs, out


def run_on_meta(module, mode=None, dtype=None) -> tuple[list, object, object]:
    """call_on_meta's inputs and output, and the model that made it."""
    with torch.device("meta"):
        inputs = list(module.get_inputs())
        model = module.Model(*init_inputs(module))
        if dtype is not None:
            inputs = cast_floats(inputs, dtype)
            model = model.to(dtype) if isinstance(model, torch.nn.Module) else model
        with mode or contextlib.nullcontext(), torch.no_grad():
            return inputs, model, model(*inputs)


def broken_by(path: Path, overrides: dict) -> Optional[str]:
    """What these --set values make the problem raise on the meta device, where it runs without them; else None."""
    source = Path(path).read_text()
    own = {name: value for name, value in overrides.items() if name in module_constants(source)}
    if not own:
        return None
    try:
        run_on_meta(load_module(source, path, "problem_info_module", own))
        return None
    except Exception as exc:
        raised = f"{type(exc).__name__}: {exc}"
    try:
        run_on_meta(load_module(source, path, "problem_info_module", {}))
    except Exception:
        return None  # broken without them too: the judge will tell
    return raised


@dataclass(frozen=True)
class Sizes:
    """Bytes of a problem's inputs, output and weights, and the output's dtypes."""

    inputs: int
    outputs: int
    weights: int
    output_dtypes: tuple


def sizes(module, dtype=None) -> Optional[Sizes]:
    """The problem's Sizes, or None when it cannot run on the meta device."""
    try:
        inputs, model, out = run_on_meta(module, dtype=dtype)
    except Exception:
        return None
    weights = list(model.parameters()) + list(model.buffers()) if isinstance(model, torch.nn.Module) else []
    outputs = [out] if isinstance(out, torch.Tensor) else list(out) if isinstance(out, (list, tuple)) else []
    return Sizes(nbytes(inputs), nbytes(out), nbytes(weights),
                 tuple(x.dtype if isinstance(x, torch.Tensor) else None for x in outputs))


# A CPU pair needs at least this many times its inputs plus output: docs/decisions/host-memory.md
MEMORY_FACTOR = 3


def host_need(size: Sizes) -> tuple[int, str]:
    """A CPU pair's need of host memory, and how it was reckoned."""
    return MEMORY_FACTOR * (size.inputs + size.outputs), f"each held {MEMORY_FACTOR:g} times over or more"


def memory_shortfall(size: Optional[Sizes], source: str, overrides: dict, available: int,
                     need=host_need) -> Optional[str]:
    """Why `need(size)` exceeds `available` bytes, with a --set hint; None when it fits or is unsized."""
    if size is None:
        return None
    needed, how = need(size)
    if needed <= available:
        return None
    return (f"needs over {gib(needed)} of memory (inputs {gib(size.inputs)}, output {gib(size.outputs)}, {how}), "
            f"{gib(available)} available here: {shrink_hint(source, overrides)}")


def shrink_hint(source: str, overrides: dict) -> str:
    """'shrink the problem with --set' and its size constants."""
    constants = module_constants(source)
    constants.update({name: value for name, value in overrides.items() if name in constants})
    shrink = ", ".join(f"{name}={value}" for name, value in constants.items() if is_size(value))
    return "shrink the problem with --set" + (f" (its sizes: {shrink})" if shrink else "")


def is_size(value) -> bool:
    """An integer or a shape (a tuple; a list after JSON)."""
    values = value if isinstance(value, (tuple, list)) and value else (value,)
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def free_memory(device: torch.device) -> int:
    """Free bytes on the device (the host's available memory on the CPU)."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def total_memory(device: torch.device) -> int:
    """The GPU's bytes in all."""
    return torch.cuda.get_device_properties(device).total_memory


def gib(size: float) -> str:
    """Bytes as GiB, for messages."""
    return f"{size / 2**30:.1f} GiB"
