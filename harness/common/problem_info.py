"""What a problem asks for, without running it: input shapes and bytes, output bytes and FLOPs, on torch's meta
device (no memory is allocated and nothing is computed); and whether this machine can hold it. Used by `run.py list`,
the judge's memory check and the lint's."""
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
    """What the problem raises on the meta device with these --set values, where it runs there without them (the
    values broke it, not the problem itself); None when they do not break it, or when the meta device cannot tell."""
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
        return None  # it does not run on the meta device as it is either: the judge will tell
    return raised


@dataclass(frozen=True)
class Sizes:
    """Bytes of a problem's inputs, its Model's output and weights, and the output's dtypes, from the meta device."""

    inputs: int
    outputs: int
    weights: int
    output_dtypes: tuple


def sizes(module, dtype=None) -> Optional[Sizes]:
    """The problem's Sizes, or None when it cannot run on the meta device (it is then run as it is, unsized)."""
    try:
        inputs, model, out = run_on_meta(module, dtype=dtype)  # the weights in --precision's dtype too
    except Exception:
        return None
    weights = list(model.parameters()) + list(model.buffers()) if isinstance(model, torch.nn.Module) else []
    outputs = [out] if isinstance(out, torch.Tensor) else list(out) if isinstance(out, (list, tuple)) else []
    return Sizes(nbytes(inputs), nbytes(out), nbytes(weights),
                 tuple(x.dtype if isinstance(x, torch.Tensor) else None for x in outputs))


# A CPU pair holds its inputs and the reference's output several times over: the judge's, copies for both workers, their
# outputs, a timing round's inputs. Measured on the 2-core CPU machine (sigmoid, 0.375 and 1.125 GiB a tensor): the
# whole run's memory grew by 3.8 GiB for each GiB of inputs plus output. Pairs needing over this many times their size
# are skipped up front (judge_memory.PairMemory.check): they cannot fit. (GPU pairs: harness/judge/footprint.py.)
MEMORY_FACTOR = 3


def host_need(size: Sizes) -> tuple[int, str]:
    """What a CPU pair needs of the host's memory (MEMORY_FACTOR), and how that was reckoned."""
    return MEMORY_FACTOR * (size.inputs + size.outputs), f"each held {MEMORY_FACTOR:g} times over or more"


def memory_shortfall(size: Optional[Sizes], source: str, overrides: dict, available: int,
                     need=host_need) -> Optional[str]:
    """Why this machine cannot hold the problem of these Sizes: what `need(size)` reckons (bytes, and how) exceeds
    `available` bytes (the figures, and the sizes to shrink with --set); None when it fits, or when the problem could
    not be sized on the meta device (size None: it is then run as it is)."""
    if size is None:
        return None
    needed, how = need(size)
    if needed <= available:
        return None
    return (f"needs over {gib(needed)} of memory (inputs {gib(size.inputs)}, output {gib(size.outputs)}, {how}), "
            f"{gib(available)} available here: {shrink_hint(source, overrides)}")


def shrink_hint(source: str, overrides: dict) -> str:
    """'shrink the problem with --set', with the problem's size constants (integers, shapes) as this run has them."""
    constants = module_constants(source)
    constants.update({name: value for name, value in overrides.items() if name in constants})
    shrink = ", ".join(f"{name}={value}" for name, value in constants.items() if is_size(value))
    return "shrink the problem with --set" + (f" (its sizes: {shrink})" if shrink else "")


def is_size(value) -> bool:
    """An integer, or a tuple of integers (a shape; a list once --set's value has crossed JSON to the judge)."""
    values = value if isinstance(value, (tuple, list)) and value else (value,)
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def free_memory(device: torch.device) -> int:
    """Free bytes on the device (GPU memory, or the host's available memory)."""
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
