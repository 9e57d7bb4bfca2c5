"""Correctness: output structure, tolerances, NaN rules, input mutation, aliasing, float64 truth."""
from __future__ import annotations

import math
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
    """Why the outputs lack the reference's form (type, count, shape, dtype, device); None when they have it."""
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


def output_tensors(out) -> list:
    """The tensors of any output (a tensor, or a tuple or list of them); whatever else it holds left out."""
    found = out if isinstance(out, (tuple, list)) else [out]
    return [t for t in found if isinstance(t, torch.Tensor)]


def chunks(a: torch.Tensor, b: torch.Tensor, size: int):
    """Matching flat slices of two same-shaped tensors, so temporaries stay small."""
    b = b.reshape(-1)
    for start, piece in slices(a, size):
        yield start, piece, b[start:start + size]


def slices(x: torch.Tensor, size: int):
    """(start, flat slice) of one tensor, `size` elements each."""
    flat = x.reshape(-1)
    for start in range(0, flat.numel(), size):
        yield start, flat[start:start + size]


def compare(ref: torch.Tensor, new: torch.Tensor, atol: float, rtol: float, chunk: int) -> Comparison:
    """|new - ref| <= atol + rtol*|ref|, NaN where ref's, infs equal: docs/decisions/truth-comparison.md"""
    if not (ref.is_floating_point() or ref.is_complex()):
        return exact_integer_comparison(ref, new)
    work = torch.promote_types(ref.dtype, torch.float32)
    suspects = torch.zeros((), dtype=torch.int64, device=ref.device)
    real = torch.zeros((), dtype=work).abs().dtype  # complex outputs: errors are magnitudes
    max_abs = torch.zeros((), dtype=real, device=ref.device)
    max_rel = torch.zeros((), dtype=real, device=ref.device)
    for _, r, n in chunks(ref, new, chunk):
        r, n = r.to(work), n.to(work)
        diff, r_abs = (n - r).abs(), r.abs()
        # Anything else (NaN, infinity, out of tolerance) is a suspect for exact_comparison.
        passed = (diff <= r_abs * rtol + atol).logical_and_(r_abs.isfinite())
        suspects += passed.numel() - passed.sum()
        max_abs = torch.maximum(max_abs, diff.max())
        max_rel = torch.maximum(max_rel, (diff / r_abs.clamp_min(max(atol, 1e-30))).max())
    if not int(suspects):
        return Comparison(True, None, float(max_abs), float(max_rel))
    return exact_comparison(ref, new, atol, rtol, chunk)


def exact_integer_comparison(ref: torch.Tensor, new: torch.Tensor) -> Comparison:
    """Integer and bool outputs must be equal, element for element."""
    differs = ref != new
    bad = int(differs.sum())
    if not bad:
        return Comparison(True, None, 0.0, 0.0)
    first = tuple(int(i) for i in differs.nonzero()[0]) if ref.dim() else ()
    reason = f"{bad} of {ref.numel()} elements differ ({ref.dtype} output, compared exactly; first at index {first})"
    worst = float((ref.long() - new.long()).abs().max()) if ref.dtype != torch.bool else 1.0
    return Comparison(False, reason, worst, 0.0)


def exact_comparison(ref: torch.Tensor, new: torch.Tensor, atol: float, rtol: float, chunk: int) -> Comparison:
    """The whole rule, NaN and infinities included; error figures over finite elements only."""
    work = torch.promote_types(ref.dtype, torch.float32)
    bad, max_abs, max_rel = 0, 0.0, 0.0
    for _, r, n in chunks(ref, new, chunk):
        r, n = r.to(work), n.to(work)
        diff = (n - r).abs()
        bad += int((~passes_rule(r, n, diff, atol, rtol)).sum())
        diff.nan_to_num_(nan=0.0, posinf=0.0)
        max_abs = max(max_abs, float(diff.max()))
        max_rel = max(max_rel, float((diff / r.abs().clamp_min(max(atol, 1e-30))).nan_to_num(0.0, 0.0, 0.0).max()))
    if not bad:
        return Comparison(True, None, max_abs, max_rel)
    return Comparison(False, failure_reason(ref, new, atol, rtol, chunk, max_abs), max_abs, max_rel)


def passes_rule(r: torch.Tensor, n: torch.Tensor, diff: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    """Elements within tolerance of a finite reference, equal (infinities), or NaN on both sides."""
    return ((diff <= atol + rtol * r.abs()) & r.isfinite()) | (n == r) | (r.isnan() & n.isnan())


def failure_reason(ref: torch.Tensor, new: torch.Tensor, atol: float, rtol: float, chunk: int, max_abs: float) -> str:
    """Why a comparison failed: NaN mismatches first, else the count out and the first index."""
    work = torch.promote_types(ref.dtype, torch.float32)
    nan_bad = bad = 0
    first_bad = None
    for start, r, n in chunks(ref, new, chunk):
        r, n = r.to(work), n.to(work)
        nan_bad += int((n.isnan() != r.isnan()).sum())
        failing = ~passes_rule(r, n, (n - r).abs(), atol, rtol)
        bad += int(failing.sum())
        if first_bad is None and bad:
            first_bad = start + int(failing.nonzero()[0, 0])
    total = ref.numel()
    if nan_bad:
        return f"{nan_bad} of {total} elements are NaN where the reference is not (or not NaN where it is)"
    where = tuple(int(i) for i in torch.unravel_index(torch.tensor(first_bad), ref.shape)) if ref.dim() else ()
    return (f"{bad} of {total} elements outside atol={atol:g} rtol={rtol:g} "
            f"(max abs err {max_abs:.3g}; first at index {where})")


def normalized_error(x: torch.Tensor, truth: torch.Tensor, atol: float, rtol: float, chunk: int) -> float:
    """max |x - truth| / (atol + rtol*|truth|) over finite truth: 1.0 means at the tolerance's edge."""
    worst = torch.zeros((), dtype=torch.float64, device=truth.device)
    for _, t, v in chunks(truth, x, chunk):
        t, v = t.double(), v.double()
        ratio = (v - t).abs_().div_(t.abs().mul_(rtol).add_(atol))
        worst = torch.maximum(worst, ratio.nan_to_num_(nan=0.0, posinf=0.0).max())
    return float(worst)


@dataclass
class TruthError:
    """One output's error against the float64 truth, in tolerances at the truth (atol + rtol*|truth|)."""

    worst: float  # infinite for a non-finite mismatch (special_truth_error)
    outside: int  # elements more than one tolerance away


def truth_error(x: torch.Tensor, truth: torch.Tensor, atol: float, rtol: float, chunk: int) -> TruthError:
    """How far x lies from the truth, in the wider dtype while finite: docs/decisions/truth-comparison.md"""
    work = torch.promote_types(torch.promote_types(x.dtype, truth.dtype), torch.float32)
    worst = torch.zeros((), dtype=work, device=truth.device)
    outside = torch.zeros((), dtype=torch.int64, device=truth.device)
    for _, t, v in chunks(truth, x, chunk):
        t = t.to(work)
        ratio = (v.to(work) - t).abs_().div_(t.abs().mul_(rtol).add_(atol))
        worst = torch.maximum(worst, ratio.max())  # NaN propagates: the special rule then runs
        outside += (ratio > 1).sum()
    if math.isfinite(float(worst)):
        return TruthError(float(worst), int(outside))
    return special_truth_error(x, truth, atol, rtol, chunk)


# This near a dtype's largest value, overflow is the terms' order: docs/decisions/accuracy-vs-truth.md
RANGE_EDGE = 2.0 ** -24
WIDE_RANGE_DTYPES = (torch.float32, torch.bfloat16, torch.float64)


def special_truth_error(x: torch.Tensor, truth: torch.Tensor, atol: float, rtol: float, chunk: int) -> TruthError:
    """truth_error with non-finite values: an unmatched NaN or infinity is infinitely wrong (but see RANGE_EDGE)."""
    edge = RANGE_EDGE * torch.finfo(x.dtype).max if x.dtype in WIDE_RANGE_DTYPES else float("inf")
    worst = torch.zeros((), dtype=torch.float64, device=truth.device)
    outside = torch.zeros((), dtype=torch.int64, device=truth.device)
    for _, t, v in chunks(truth, x, chunk):
        t, v = t.double(), v.double()
        ratio = (v - t).abs_().div_(t.abs().mul_(rtol).add_(atol))
        special = ~t.isfinite()
        same = (v == t) | (v.isnan() & t.isnan())
        ratio = ratio.masked_fill_(special & same, 0.0).masked_fill_(special & ~same, float("inf"))
        ratio = ratio.nan_to_num_(nan=float("inf"), posinf=float("inf"))
        ratio.masked_fill_(v.isinf() & t.isfinite() & (v.sign() == t.sign()) & (t.abs() >= edge), 0.0)
        worst = torch.maximum(worst, ratio.max())
        outside += (ratio > 1).sum()
    return TruthError(float(worst), int(outside))


CHANCE_OUTSIDE = 4  # elements beyond a tolerance by chance: docs/decisions/accuracy-vs-truth.md


def as_accurate(new: TruthError, ref: TruthError, factor: float) -> bool:
    """Is `new` as accurate against the truth as `ref`, within `factor`, in worst error and in count outside?"""
    return (math.isfinite(ref.worst) and new.worst <= factor * ref.worst
            and new.outside <= factor * (ref.outside + CHANCE_OUTSIDE))


def within_reference_error(new: torch.Tensor, ref: torch.Tensor, ref_error: TruthError, atol: float, rtol: float,
                           factor: float, chunk: int) -> tuple:
    """(could `new` pass as_accurate, worst distance in tolerances): docs/decisions/accuracy-vs-truth.md"""
    shrink = 1 - rtol * ref_error.worst
    if not (math.isfinite(ref_error.worst) and ref_error.worst > 0 and shrink > 0):
        return False, math.inf
    beyond = 2 / shrink  # tolerances at the reference beyond which one side lies more than one from the truth
    apart = truth_error(new, ref, beyond * atol, beyond * rtol, chunk)
    worst = apart.worst * beyond
    ok = (worst <= (1 + factor) * ref_error.worst / shrink
          and apart.outside <= ref_error.outside + factor * (ref_error.outside + CHANCE_OUTSIDE))
    return ok, worst


def constant_would_pass(ref: torch.Tensor, value: float, atol: float, rtol: float, chunk: int) -> bool:
    """Would a constant output of `value` pass against `ref` (integers: be equal)? No output-sized tensor is made."""
    for _, r, _ in chunks(ref, ref, chunk):
        if not (r.is_floating_point() or r.is_complex()):
            if not bool((r == value).all()):
                return False
            continue
        r = r.to(torch.promote_types(r.dtype, torch.float32))
        if not bool(((r - value).abs() <= atol + rtol * r.abs()).all()):
            return False
    return True


def strided_sample(x: torch.Tensor, count: int = 1 << 16) -> torch.Tensor:
    """About `count` elements spread evenly over the tensor."""
    flat = x.detach().reshape(-1)
    return flat[:: max(1, flat.numel() // count)]


def fingerprint(x: torch.Tensor, sample: int = 1 << 16) -> tuple:
    """Shape, dtype and the bits of a strided sample: enough to tell two draws of inputs apart."""
    picked = strided_sample(x, sample).contiguous()
    view = INT_VIEW.get(picked.element_size()) if picked.is_floating_point() else None
    bits = picked.view(view) if view is not None else picked
    return tuple(x.shape), str(x.dtype), bits.cpu().numpy().tobytes()


def output_fingerprint(x: torch.Tensor) -> tuple:
    """The fingerprint plus a digest of every element: equal ones are the same output, for the lint."""
    return fingerprint(x) + (bits_digest(x),)


DIGEST_PRIME = (1 << 31) - 1


def bits_digest(x: torch.Tensor, chunk: int = 1 << 22) -> tuple[int, int]:
    """Two sums of all elements' bits, one position-weighted, mod a prime: docs/decisions/truth-comparison.md"""
    flat = x.detach()
    if flat.is_complex():
        flat = torch.view_as_real(flat)
    flat = flat.reshape(-1)
    if flat.element_size() > 4:  # as 32-bit words, whose sums cannot overflow
        flat = flat.view(torch.int32)
    elif flat.is_floating_point():
        flat = flat.view(INT_VIEW[flat.element_size()])
    total = weighted = torch.zeros((), dtype=torch.int64, device=flat.device)
    for start, piece in slices(flat, chunk):
        values = piece.to(torch.int64)
        weights = torch.arange(start, start + values.numel(), device=flat.device) % 251 + 1
        total = (total + values.sum()) % DIGEST_PRIME
        weighted = (weighted + (values * weights).sum()) % DIGEST_PRIME
    return int(total), int(weighted)


def input_fingerprint(inputs: list) -> list:
    """Fingerprints of a list of inputs (other values: repr)."""
    return [fingerprint(x) if isinstance(x, torch.Tensor) else repr(x) for x in inputs]


def max_difference(a: torch.Tensor, b: torch.Tensor, chunk: int) -> float:
    """The largest |a - b| of two runs' outputs (NaN on one side only: infinite; integers: 0 or 1)."""
    if not (a.is_floating_point() or a.is_complex()):
        return 0.0 if torch.equal(a, b) else 1.0
    work = torch.promote_types(a.dtype, torch.float32)
    worst = 0.0
    for _, x, y in chunks(a, b, chunk):
        x, y = x.to(work), y.to(work)
        diff = (x - y).abs().nan_to_num_(nan=float("inf"))
        diff.masked_fill_((x == y) | (x.isnan() & y.isnan()), 0.0)
        worst = max(worst, float(diff.max()))
    return worst


def same_bits(a: torch.Tensor, b: torch.Tensor, chunk: int = 1 << 26) -> bool:
    """Bit-for-bit equality (NaN payloads included), chunked to avoid output-sized temporaries."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    view = INT_VIEW.get(a.element_size()) if a.is_floating_point() else None
    for _, x, y in chunks(a, b, chunk):
        if view is not None and x.is_contiguous() and y.is_contiguous():
            same = torch.equal(x.view(view), y.view(view))
        elif a.is_floating_point():
            same = bool(((x == y) | (x.isnan() & y.isnan())).all())
        else:
            same = torch.equal(x, y)
        if not same:
            return False
    return True


def mutated_inputs(private: list, shared: list) -> list:
    """Indices of tensor inputs whose shared copies differ from the judge's own."""
    return [i for i, (p, s) in enumerate(zip(private, shared))
            if isinstance(p, torch.Tensor) and not same_bits(p, s)]


def aliases_input(outputs: list, shared: list, originals: list) -> bool:
    """Does an output change when its inputs are overwritten? (Works across IPC.)"""
    floats = [(s, o) for s, o in zip(shared, originals) if isinstance(s, torch.Tensor) and s.is_floating_point()]
    outs = [o for o in outputs if isinstance(o, torch.Tensor) and o.is_floating_point()]
    if not floats or not outs:
        return False
    before = [nan_count(o) for o in outs]
    for s, _ in floats:
        s.fill_(float("nan"))
    after = [nan_count(o) for o in outs]
    for s, o in floats:
        s.copy_(o)
    return after != before


def nan_count(x: torch.Tensor, chunk: int = 1 << 24) -> int:
    """NaNs in x, chunked to avoid output-sized temporaries."""
    return int(sum(torch.count_nonzero(piece.isnan()) for _, piece in slices(x, chunk)))


def as_float64(values: list) -> list:
    """Float tensors upcast to float64; other values as they are."""
    return [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in values]


NARROW_TRUTH = (torch.float32, torch.float16, torch.bfloat16)


def stored_truth(out, ref_dtypes) -> list:
    """The truth's outputs as the judge keeps them: float32 where ref_dtypes (None: unknown) are float32 or narrower."""
    outs = items(out)
    dtypes = ref_dtypes if ref_dtypes is not None and len(ref_dtypes) == len(outs) else [None] * len(outs)
    return [t.float() if t.is_floating_point() and dtype in NARROW_TRUTH else t for t, dtype in zip(outs, dtypes)]
