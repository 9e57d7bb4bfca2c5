"""Correctness: output structure, tolerances, NaN rules, input mutation, aliasing, float64 truth."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@dataclass
class Comparison:
    """How one candidate output compares with the reference output."""

    ok: bool
    reason: Optional[str]
    max_abs_err: float
    max_rel_err: float


def structure_problem(ref_out, reply: dict) -> Optional[str]:
    """Why the candidate's outputs do not have the reference's form (type, count, shape, dtype, device)."""
    ref_items = [ref_out] if isinstance(ref_out, torch.Tensor) else list(ref_out)
    ref_kind = "tensor" if isinstance(ref_out, torch.Tensor) else type(ref_out).__name__
    if reply["kind"] == "other":
        return f"returned {reply['type']}, expected torch.Tensor"
    if reply["kind"] != ref_kind and not {reply["kind"], ref_kind} <= {"tuple", "list"}:
        return f"returned a {reply['kind']}, expected a {ref_kind}"
    if len(reply["items"]) != len(ref_items):
        return f"returned {len(reply['items'])} outputs, expected {len(ref_items)}"
    for i, (ref, new) in enumerate(zip(ref_items, reply["items"])):
        label = "output" if len(ref_items) == 1 else f"output {i}"
        if isinstance(new, dict):
            return f"{label} is a {new['not_tensor']}, expected exactly torch.Tensor (no subclass)"
        if tuple(new.shape) != tuple(ref.shape):
            return f"{label} has shape {tuple(new.shape)}, expected {tuple(ref.shape)}"
        if new.dtype != ref.dtype:
            return f"{label} has dtype {new.dtype}, expected {ref.dtype}"
        if new.device != ref.device:
            return f"{label} is on {new.device}, expected {ref.device}"
    return None


def items(out) -> list:
    """The tensors of an output (a tensor or a tuple/list of them)."""
    return [out] if isinstance(out, torch.Tensor) else list(out)


def chunks(a: torch.Tensor, b: torch.Tensor, size: int):
    """Matching flat slices of two same-shaped tensors, so temporaries stay small."""
    a, b = a.reshape(-1), b.reshape(-1)
    for start in range(0, a.numel(), size):
        yield start, a[start:start + size], b[start:start + size]


def compare(ref: torch.Tensor, new: torch.Tensor, atol: float, rtol: float, chunk: int) -> Comparison:
    """|new - ref| <= atol + rtol*|ref| everywhere; NaN only where the reference is NaN; infinities equal."""
    if not (ref.is_floating_point() or ref.is_complex()):
        equal = torch.equal(ref, new)
        return Comparison(equal, None if equal else "integer output differs", 0.0 if equal else float("nan"), 0.0)
    bad = nan_bad = 0
    max_abs = max_rel = 0.0
    first_bad = None
    for start, r, n in chunks(ref, new, chunk):
        r, n = r.double(), n.double()
        r_nan, n_nan = r.isnan(), n.isnan()
        nan_bad += int((n_nan & ~r_nan).sum()) + int((r_nan & ~n_nan).sum())
        both_finite = r.isfinite() & n.isfinite()
        inf_bad = (~r_nan & ~r.isfinite()) & (n != r)
        diff = torch.where(both_finite, (n - r).abs(), torch.zeros_like(r))
        outside = (diff > atol + rtol * r.abs()) | inf_bad | (r.isfinite() & ~n.isfinite() & ~n_nan)
        bad += int(outside.sum())
        if first_bad is None and bool(outside.any()):
            first_bad = start + int(outside.nonzero()[0, 0])
        if diff.numel():
            max_abs = max(max_abs, float(diff.max()))
            max_rel = max(max_rel, float((diff / r.abs().clamp_min(max(atol, 1e-30))).max()))
    total = ref.numel()
    if nan_bad:
        return Comparison(False, f"{nan_bad} of {total} elements are NaN where the reference is not (or not NaN where it is)", max_abs, max_rel)
    if bad:
        where = tuple(int(i) for i in torch.unravel_index(torch.tensor(first_bad), ref.shape)) if ref.dim() else ()
        return Comparison(False, f"{bad} of {total} elements outside atol={atol:g} rtol={rtol:g} "
                                 f"(max abs err {max_abs:.3g}; first at index {where})", max_abs, max_rel)
    return Comparison(True, None, max_abs, max_rel)


def normalized_error(x: torch.Tensor, truth: torch.Tensor, atol: float, rtol: float, chunk: int) -> float:
    """max |x - truth| / (atol + rtol*|truth|) over finite truth: 1.0 means at the tolerance's edge."""
    worst = 0.0
    for _, t, v in chunks(truth, x, chunk):
        t, v = t.double(), v.double()
        finite = t.isfinite() & v.isfinite()
        if finite.any():
            worst = max(worst, float(((v - t).abs() / (atol + rtol * t.abs()))[finite].max()))
    return worst


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-for-bit equality (NaN payloads included), without large temporaries."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    view = INT_VIEW.get(a.element_size()) if a.is_floating_point() else None
    if view is not None and a.is_contiguous() and b.is_contiguous():
        return torch.equal(a.view(view), b.view(view))
    if a.is_floating_point():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return torch.equal(a, b)


def mutated_inputs(private: list, shared: list) -> list:
    """Indices of tensor inputs the candidate changed (shared copies differ from the judge's own)."""
    return [i for i, (p, s) in enumerate(zip(private, shared))
            if isinstance(p, torch.Tensor) and not same_bits(p, s)]


def aliases_input(outputs: list, shared: list, originals: list) -> bool:
    """Does an output change when the inputs it was computed from are overwritten? (Works across IPC.)"""
    floats = [(s, o) for s, o in zip(shared, originals) if isinstance(s, torch.Tensor) and s.is_floating_point()]
    outs = [o for o in outputs if isinstance(o, torch.Tensor) and o.is_floating_point()]
    if not floats or not outs:
        return False
    before = [int(o.isnan().sum()) for o in outs]
    for s, _ in floats:
        s.fill_(float("nan"))
    after = [int(o.isnan().sum()) for o in outs]
    for s, o in floats:
        s.copy_(o)
    return after != before


def as_float64(values: list) -> list:
    """Float tensors upcast to float64 (for the ground truth); other values as they are."""
    return [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in values]
