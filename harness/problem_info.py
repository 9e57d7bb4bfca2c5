"""What a problem asks for, without running it: input shapes and bytes, output bytes and FLOPs, on torch's meta
device (no memory is allocated and nothing is computed); and whether this machine can hold it. Used by `run.py list`,
the judge's memory check and the lint's."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Optional

import torch
from torch.utils.flop_counter import FlopCounterMode

from harness.discover import module_constants
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


# A CPU pair holds its inputs and the reference's output several times over: the judge's, copies for both workers,
# their outputs, a timing round's inputs. Measured on the 2-core CPU machine (sigmoid, 0.375 and 1.125 GiB a tensor):
# the whole run's memory grew by 3.8 GiB for each GiB of inputs plus output. Pairs needing over this many times
# their size are skipped up front (judge.check_host_memory): they cannot fit.
MEMORY_FACTOR = 3


def memory_shortfall(module, source: str, overrides: dict, available: int, factor: float, dtype=None) -> Optional[str]:
    """Why this machine cannot hold the problem: its inputs and output, `factor` times over, exceed `available` bytes
    (the figures, and the sizes to shrink with --set); None when they fit, or when the problem cannot be sized on the
    meta device (it is then run as it is)."""
    try:
        inputs, out = call_on_meta(module, dtype=dtype)
    except Exception:
        return None
    input_bytes, output_bytes = nbytes(inputs), nbytes(out)
    need = factor * (input_bytes + output_bytes)
    if need <= available:
        return None
    constants = module_constants(source)
    constants.update({name: value for name, value in overrides.items() if name in constants})
    sizes = ", ".join(f"{name}={value}" for name, value in constants.items()
                      if isinstance(value, int) and not isinstance(value, bool))
    return (f"needs over {gib(need)} of memory (inputs {gib(input_bytes)}, output {gib(output_bytes)}, each held "
            f"{factor:g} times over or more), {gib(available)} available here: shrink the problem with --set"
            + (f" (its sizes: {sizes})" if sizes else ""))


def free_memory(device: torch.device) -> int:
    """Free bytes on the device (GPU memory, or the host's available memory)."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def gib(size: float) -> str:
    """Bytes as GiB, for messages."""
    return f"{size / 2**30:.1f} GiB"
