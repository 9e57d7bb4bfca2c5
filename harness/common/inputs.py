"""Seeded inputs, born on the target device: the problem's own distribution, then a wider one made from it."""
from __future__ import annotations

import contextlib
import hashlib
import random
from typing import Optional

import torch
from torch.overrides import TorchFunctionMode

from harness.common import check


class ProblemError(Exception):
    """The problem file itself misbehaves (missing functions, wrong return types)."""


def trial_seed(secret: int, problem: str, trial: int) -> int:
    """A seed the candidate cannot predict: derived from the run's secret."""
    digest = hashlib.sha256(f"{secret}:{problem}:{trial}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def to_device(x, device: torch.device):
    """Tensors moved to the device; other values as they are."""
    return x.to(device) if isinstance(x, torch.Tensor) else x


def make_inputs(module, seed: int, device: torch.device, wide_scale: Optional[float] = None,
                dtype: Optional[torch.dtype] = None) -> list:
    """get_inputs() seeded, on `device`; widened by wide_scale (widen_all), floats cast to dtype (--precision)."""
    torch.manual_seed(seed)
    with torch.device(device):
        tracker = DrawTracker() if wide_scale is not None else None
        with tracker or contextlib.nullcontext():
            raw = module.get_inputs()
        if not isinstance(raw, (list, tuple)):
            raise ProblemError(f"get_inputs() returned {type(raw).__name__}, expected a list")
        inputs = [to_device(x, device) for x in raw]
        if tracker is not None and wide_scale is not None:
            widen_all(inputs, [tracker.is_plain_draw(x) for x in raw], wide_scale, random.Random(seed))
        if dtype is not None:
            inputs = cast_floats(inputs, dtype)
    return inputs


def cast_floats(values: list, dtype: torch.dtype) -> list:
    """Float tensors cast to dtype (--precision); other values as they are."""
    return [x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in values]


# Wide trials transform get_inputs()'s tensors, never redraw them, to keep their structure: docs/judging.md.
PLAIN_DRAWS = frozenset({"rand", "randn", "rand_like", "randn_like"})
REDRAWS = frozenset({"normal_", "uniform_"})  # in place: the tensor now holds a plain draw
KEEPS_DRAW = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "contiguous", "clone", "detach",
                        "requires_grad_", "view", "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose",
                        "t", "__get__"})  # __get__: properties such as .T and .data
PLAIN_MARK = "_harness_plain_draw"


class DrawTracker(TorchFunctionMode):
    """Watches get_inputs(): which tensors it returns are plain random draws (PLAIN_DRAWS)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        first = args[0] if args else None
        if name in REDRAWS and isinstance(first, torch.Tensor):
            mark(first, True)
        elif name in PLAIN_DRAWS or (name in KEEPS_DRAW and self.is_plain_draw(first)):
            mark(out, True)
        elif name.endswith("_") and not name.startswith("__") and isinstance(first, torch.Tensor):
            mark(first, False)  # changed in place
        return out

    @staticmethod
    def is_plain_draw(x) -> bool:
        return isinstance(x, torch.Tensor) and getattr(x, PLAIN_MARK, False)


def mark(x, plain: bool) -> None:
    if isinstance(x, torch.Tensor):
        setattr(x, PLAIN_MARK, plain)


def widen_all(inputs: list, plain: list, scale: float, rng: random.Random) -> None:
    """Widen non-integer floats in place: plain draws standardized and shifted; others, unless in [0, 1], scaled."""
    for x, is_plain in zip(inputs, plain):
        if not (isinstance(x, torch.Tensor) and x.is_floating_point()) or x.numel() == 0 or integer_valued(x):
            continue
        if is_plain:
            std, mean = torch.std_mean(x)
            factor = scale / float(std) if float(std) > 0 else scale
            x.sub_(float(mean)).mul_(factor).add_(rng.uniform(-scale, scale))
        elif not within_unit_interval(x):
            x.mul_(rng.uniform(scale, 2 * scale))


def integer_valued(x: torch.Tensor) -> bool:
    """Do a strided sample of its values all lie on integers (labels, masks)?"""
    picked = check.strided_sample(x)
    return bool((picked == picked.round()).all())


def within_unit_interval(x: torch.Tensor) -> bool:
    low, high = torch.aminmax(x)
    return bool(low >= 0) and bool(high <= 1)


def init_inputs(module) -> list:
    """The constructor arguments from get_init_inputs()."""
    raw = module.get_init_inputs()
    if not isinstance(raw, (list, tuple)):
        raise ProblemError(f"get_init_inputs() returned {type(raw).__name__}, expected a list")
    return list(raw)


def nbytes(values) -> int:
    """Bytes of every tensor in a (possibly nested) list, tuple or dict."""
    if isinstance(values, torch.Tensor):
        return values.numel() * values.element_size()
    if isinstance(values, (list, tuple)):
        return sum(nbytes(v) for v in values)
    if isinstance(values, dict):
        return sum(nbytes(v) for v in values.values())
    return 0


PLACEMENT_SLACK_BYTES = 64 << 20  # how far a timing input may move
PLACEMENT_ALIGN = 4096


class MovingCopies:
    """A worker's timing inputs, each moved in a larger buffer by refill: docs/decisions/moving-inputs.md"""

    def __init__(self, inputs: list):
        self.rng = random.Random()  # seeded from the OS: where a copy lies is no one's choice
        self.buffers = [torch.empty(buffer_bytes(span_bytes(clone_layout(x))), dtype=torch.uint8, device=x.device)
                        if isinstance(x, torch.Tensor) else None for x in inputs]
        self.tensors = [self.placed(buffer, x) if buffer is not None else x for buffer, x in zip(self.buffers, inputs)]

    def refill(self, inputs: list, move: bool) -> list:
        """Copy the new contents in, moved first when `move` (never under a captured graph); the tensors to use."""
        self.tensors = [(self.placed(buffer, new) if move else mine.copy_(new)) if buffer is not None else mine
                        for buffer, mine, new in zip(self.buffers, self.tensors, inputs)]
        return self.tensors

    def placed(self, buffer: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """A copy of x at a random aligned offset in buffer, strided as x.clone() would be."""
        layout = clone_layout(x)
        size = span_bytes(layout)
        first = -buffer.data_ptr() % PLACEMENT_ALIGN
        slack = buffer.numel() - PLACEMENT_ALIGN - size  # as buffer_bytes made it
        offset = self.rng.randrange(first, first + slack + 1, PLACEMENT_ALIGN)
        view = buffer[offset:offset + size].view(x.dtype).as_strided(layout.shape, layout.stride())
        return view.copy_(x)


def clone_layout(x: torch.Tensor) -> torch.Tensor:
    """A tensor without storage, shaped and strided as x.clone() would be."""
    return torch.empty_like(x, device="meta")


def span_bytes(layout: torch.Tensor) -> int:
    """Bytes of memory a tensor of this layout spans."""
    if layout.numel() == 0:
        return 0
    return (1 + sum((n - 1) * step for n, step in zip(layout.shape, layout.stride()))) * layout.element_size()


def buffer_bytes(size: int) -> int:
    """Buffer bytes for `size` to move by up to its own size (at most PLACEMENT_SLACK_BYTES), aligned."""
    return size + min(PLACEMENT_SLACK_BYTES, -(-size // PLACEMENT_ALIGN) * PLACEMENT_ALIGN) + PLACEMENT_ALIGN
