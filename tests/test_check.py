import math

import pytest
import torch

from harness.common import check


def cmp(ref, new, atol=1e-4, rtol=1e-4):
    return check.compare(ref, new, atol, rtol, chunk=7)  # a tiny chunk exercises the chunking


def test_within_tolerance_passes_and_reports_errors():
    ref = torch.linspace(-2, 2, 50)
    result = cmp(ref, ref + 5e-5)
    assert result.ok and result.max_abs_err == pytest.approx(5e-5, rel=1e-2)


def test_outside_tolerance_fails_with_count_and_index():
    ref = torch.zeros(4, 5)
    new = ref.clone()
    new[2, 3] = 1.0
    result = cmp(ref, new)
    assert not result.ok and "1 of 20 elements" in result.reason and "(2, 3)" in result.reason


def test_nan_rules():
    ref = torch.tensor([1.0, float("nan"), 3.0])
    assert cmp(ref, torch.tensor([1.0, float("nan"), 3.0])).ok
    assert not cmp(ref, torch.tensor([1.0, 2.0, 3.0])).ok  # the reference's NaN must stay NaN
    assert not cmp(ref, torch.tensor([float("nan"), float("nan"), 3.0])).ok


def test_infinities_must_match():
    ref = torch.tensor([float("inf"), -float("inf"), 1.0])
    assert cmp(ref, ref.clone()).ok
    assert not cmp(ref, torch.tensor([float("inf"), 0.0, 1.0])).ok
    assert not cmp(torch.tensor([1.0]), torch.tensor([float("inf")])).ok


def test_integer_outputs_compare_exactly():
    assert cmp(torch.arange(5), torch.arange(5)).ok
    off_by_one = cmp(torch.arange(5), torch.tensor([0, 1, 2, 4, 4]))
    assert not off_by_one.ok and "1 of 5 elements differ" in off_by_one.reason and "(3,)" in off_by_one.reason
    flags = torch.tensor([True, False, True])
    assert cmp(flags, flags.clone()).ok and not cmp(flags, ~flags).ok  # bools: no arithmetic on them


def test_max_difference_between_two_runs():
    a = torch.tensor([1.0, float("nan"), float("inf"), 2.0])
    assert check.max_difference(a, a.clone(), 2) == 0.0  # NaN and infinities in the same places: no spread
    assert check.max_difference(a, torch.tensor([1.5, float("nan"), float("inf"), 2.0]), 2) == 0.5
    assert check.max_difference(a, torch.tensor([1.0, 0.0, float("inf"), 2.0]), 2) == float("inf")  # one NaN
    assert check.max_difference(torch.arange(3), torch.tensor([0, 1, 5]), 2) == 1.0  # integers: differ or not


def test_structure_checks():
    ref = torch.zeros(2, 3)
    ok = {"kind": "tensor", "items": [torch.zeros(2, 3)]}
    assert check.structure_problem(ref, ok) is None
    assert "shape" in check.structure_problem(ref, {"kind": "tensor", "items": [torch.zeros(6)]})
    assert "dtype" in check.structure_problem(ref, {"kind": "tensor", "items": [torch.zeros(2, 3, dtype=torch.float64)]})
    assert "tuple" in check.structure_problem(ref, {"kind": "tuple", "items": [torch.zeros(2, 3)]})
    assert "no subclass" in check.structure_problem(ref, {"kind": "tensor", "items": [{"not_tensor": "Sub"}]})
    assert "returned int" in check.structure_problem(ref, {"kind": "other", "type": "int", "items": []})


def test_tuple_outputs_may_come_back_as_lists():
    ref = (torch.zeros(1), torch.ones(2))
    assert check.structure_problem(ref, {"kind": "list", "items": [torch.zeros(1), torch.ones(2)]}) is None
    assert "expected 2" in check.structure_problem(ref, {"kind": "tuple", "items": [torch.zeros(1)]})


def test_same_bits_sees_nan_payloads_and_signed_zero():
    a = torch.tensor([0.0, float("nan")])
    assert check.same_bits(a, a.clone())
    assert not check.same_bits(a, torch.tensor([-0.0, float("nan")]))


def test_mutation_and_alias_detection():
    private = [torch.rand(3), 5]
    shared = [private[0].clone(), 5]
    assert check.mutated_inputs(private, shared) == []
    shared[0][1] += 1
    assert check.mutated_inputs(private, shared) == [0]
    shared = [private[0].clone(), 5]
    assert check.aliases_input([shared[0][:2]], shared, private)
    assert check.same_bits(shared[0], private[0])  # restored after the probe
    assert not check.aliases_input([shared[0].clone()], shared, private)


def test_normalized_error_against_truth():
    truth = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert check.normalized_error(truth.float(), truth, 1e-4, 1e-4, 7) == 0.0
    err = check.normalized_error(torch.tensor([1.0, 2.0002]), truth, 1e-4, 1e-4, 7)
    assert math.isclose(err, 0.0002 / (1e-4 + 2e-4), rel_tol=1e-3)


def test_as_float64_upcasts_float_tensors_only():
    out = check.as_float64([torch.rand(2), torch.arange(3), 4])
    assert out[0].dtype == torch.float64 and out[1].dtype == torch.int64 and out[2] == 4



def test_compare_agrees_with_the_rule_element_by_element():
    """Against a plain statement of the rule, on values mixed with NaN, infinities and near-misses, in small chunks."""
    import math
    import random

    rng = random.Random(0)
    specials = [float("nan"), float("inf"), -float("inf"), 0.0, 1.0, -1.0, 1e-5, 3.4e38]
    atol = rtol = 1e-4

    def element_ok(r, n):
        if math.isnan(r) or math.isnan(n):
            return math.isnan(r) and math.isnan(n)
        if math.isinf(r) or math.isinf(n):
            return r == n
        return abs(n - r) <= atol + rtol * abs(r)

    for _ in range(200):
        ref = [rng.choice(specials) if rng.random() < 0.3 else rng.uniform(-10, 10) for _ in range(7)]
        new = [x if rng.random() < 0.5 else rng.choice([x + rng.uniform(-2e-4, 2e-4), rng.choice(specials)]) for x in ref]
        r32, n32 = torch.tensor(ref, dtype=torch.float32), torch.tensor(new, dtype=torch.float32)
        expected = all(element_ok(a, b) for a, b in zip(r32.tolist(), n32.tolist()))
        got = check.compare(r32, n32, atol, rtol, chunk=3)
        assert got.ok == expected, (r32.tolist(), n32.tolist())
        assert got.ok or got.reason


def test_truth_error_counts_non_finite_values_as_infinitely_wrong():
    truth = torch.tensor([1.0, float("nan"), float("inf"), 4.0], dtype=torch.float64)
    right = check.truth_error(torch.tensor([1.0, float("nan"), float("inf"), 4.0002]), truth, 1e-4, 1e-4, 3)
    assert math.isclose(right.worst, 0.0002 / (1e-4 + 4e-4), rel_tol=1e-2) and right.outside == 0  # (4.0002 in float32)
    for wrong in ([1.0, 0.0, float("inf"), 4.0], [1.0, float("nan"), 5.0, 4.0], [float("nan"), float("nan"), float("inf"), 4.0]):
        error = check.truth_error(torch.tensor(wrong), truth, 1e-4, 1e-4, 3)
        assert error.worst == float("inf") and error.outside == 1, wrong


def test_an_overflow_at_the_range_edge_is_the_order_of_the_arithmetic_not_an_error():
    """KernelBench level1 50 (a 256-term product) on wide inputs: a product taken in sequence overflows where the float64
    truth, and another order's result, are finite just under the largest float32; both orders are as accurate."""
    big = 2.0 ** 127  # float32's largest finite is just under 2**128
    factors = torch.tensor([[big, 4.0, 0.25]] * 2 + [[2.0, 2.0, 0.25]], dtype=torch.float64)  # truth: 2**127, 2**127, 1
    truth = factors.prod(1)
    in_sequence = factors.float()[:, 0] * factors.float()[:, 1] * factors.float()[:, 2]  # 2**129 overflows first
    reordered = factors.float()[:, 0] * (factors.float()[:, 1] * factors.float()[:, 2])
    assert in_sequence[:2].isinf().all() and reordered.isfinite().all()
    a, b = (check.truth_error(x, truth.float(), 1e-4, 1e-4, 2) for x in (in_sequence, reordered))
    assert a.worst == b.worst == 0.0 and check.as_accurate(a, b, 2.0) and check.as_accurate(b, a, 2.0)
    assert check.truth_error(in_sequence.bfloat16(), truth.float(), 1e-2, 1e-2, 2).worst == 0.0  # float32's range
    # far from the edge, or with the other sign, an infinity stays infinitely wrong; so does a NaN, and a finite value
    # where the truth is an infinity (a division by zero, say)
    for value, t in ((float("inf"), 1e30), (-float("inf"), 3.0e38), (float("nan"), 3.0e38), (3.0e38, float("inf"))):
        assert check.truth_error(torch.tensor([value]), torch.tensor([t]), 1e-4, 1e-4, 1).worst == float("inf"), value
    # float16's largest value (65504) is within the values problems make: an infinity there is wrong
    half = check.truth_error(torch.tensor([float("inf"), -float("inf")], dtype=torch.float16),
                             torch.tensor([1.0, -60000.0]), 1e-2, 1e-2, 2)
    assert half.worst == float("inf") and half.outside == 2


def test_truth_error_in_float32_agrees_with_the_float64_rule_where_everything_is_finite():
    torch.manual_seed(0)
    truth = torch.randn(10_000, dtype=torch.float64) * 100
    x = (truth + torch.randn(10_000, dtype=torch.float64) * 1e-3 * truth.abs()).float()
    stored = truth.float()  # as the judge keeps it for a float32 output
    fast = check.truth_error(x, stored, 1e-4, 1e-4, 999)
    exact = check.special_truth_error(x, stored, 1e-4, 1e-4, 999)
    assert 0 < exact.outside < 10_000 and math.isclose(fast.worst, exact.worst, rel_tol=1e-5)
    assert abs(fast.outside - exact.outside) <= 2  # a ratio within float32 rounding of 1 may land either side


def naive_variances(seed: int) -> tuple:
    """float64 truth and three float32 orders of E[x^2] - E[x]^2 over rows whose mean is far from 0: the float32 error
    is about one tolerance (1e-4), where an honest kernel's own order of summation can land outside it."""
    torch.manual_seed(seed)
    x = torch.randn(256, 4096) + 30
    wide = x.double()
    truth = (wide * wide).mean(1) - wide.mean(1) ** 2
    blocks = x.view(256, 64, 64)
    torch_order = (x * x).mean(1) - x.mean(1) ** 2
    blocked = (blocks * blocks).mean(2).mean(1) - blocks.mean(2).mean(1) ** 2
    in_bfloat16 = ((x * x).bfloat16().float().mean(1) - x.bfloat16().float().mean(1) ** 2)
    return truth, torch_order, blocked, in_bfloat16


def test_two_float32_orders_are_as_accurate_as_each_other_and_bfloat16_is_not():
    """The figures behind truth_accuracy_factor (2) and CHANCE_OUTSIDE: on 40 draws, the worst errors of two float32
    orders of one naive variance differed by at most 1.31x, and their counts beyond a tolerance were 1 to 11."""
    for seed in range(10):
        truth, torch_order, blocked, in_bfloat16 = naive_variances(seed)
        a, b, c = (check.truth_error(x, truth, 1e-4, 1e-4, 1 << 20) for x in (torch_order, blocked, in_bfloat16))
        assert max(a.worst, b.worst) / min(a.worst, b.worst) < 1.5, (seed, a, b)
        assert check.as_accurate(a, b, 2.0) and check.as_accurate(b, a, 2.0), (seed, a, b)
        assert not check.as_accurate(c, a, 2.0) and not check.as_accurate(c, b, 2.0), (seed, c)


def test_a_reference_far_off_in_a_few_elements_excuses_no_candidate_wrong_in_many():
    truth = torch.zeros(1000, dtype=torch.float64)
    ref = torch.zeros(1000)
    ref[:3] = 1.0  # a discontinuity resolved the other way in float64: 1e4 tolerances off, in 3 elements
    bad = torch.full((1000,), 0.5)  # wrong everywhere, by less than the reference's worst
    a, r = check.truth_error(bad, truth, 1e-4, 1e-4, 64), check.truth_error(ref, truth, 1e-4, 1e-4, 64)
    assert a.worst < r.worst and not check.as_accurate(a, r, 2.0)
    assert not check.as_accurate(a, check.TruthError(float("inf"), 3), 100.0)  # an infinitely wrong reference excuses nothing


def tf32_rounded(x: torch.Tensor, nearest: bool) -> torch.Tensor:
    """x with TF32's 10-bit mantissa: truncated, or rounded to nearest (two algorithms' ways of one TF32 product)."""
    bits = x.view(torch.int32) + (0x1000 if nearest else 0)
    return (bits & ~0x1FFF).view(torch.float32)


def test_without_a_truth_two_tf32_products_lie_within_the_references_error_and_bfloat16_does_not():
    """Two honest TF32 runs of one product (as two cuDNN algorithms are) differ by far more than 1e-4; with no float64
    truth for their inputs, the reference's own error measured on other inputs still tells them from bfloat16."""
    for seed in range(3):
        g = torch.Generator().manual_seed(seed)
        a, b = torch.randn(256, 1024, generator=g), torch.randn(1024, 256, generator=g)
        truth = a.double() @ b.double()  # the trial's: the reference's error is measured there
        ref_error = check.truth_error(tf32_rounded(a, False) @ tf32_rounded(b, False), truth, 1e-4, 1e-4, 1 << 20)
        c, d = torch.randn(256, 1024, generator=g), torch.randn(1024, 256, generator=g)  # a timed round's inputs
        ref, other = (tf32_rounded(c, nearest) @ tf32_rounded(d, nearest) for nearest in (False, True))
        in_bfloat16 = c.bfloat16().float() @ d.bfloat16().float()
        assert not check.compare(ref, other, 1e-4, 1e-4, 1 << 20).ok
        assert check.within_reference_error(other, ref, ref_error, 1e-4, 1e-4, 2.0, 1 << 20)[0], (seed, ref_error)
        assert not check.within_reference_error(in_bfloat16, ref, ref_error, 1e-4, 1e-4, 2.0, 1 << 20)[0]


def test_without_a_truth_a_reference_far_off_in_a_few_elements_excuses_no_candidate_wrong_in_many():
    ref = torch.zeros(1000)
    far_in_three = check.TruthError(1e3, 3)  # what the trials measured: 1e3 tolerances off, in 3 elements
    wrong_everywhere = torch.full((1000,), 0.2)  # 2e3 tolerances off: inside the worst that allows (3e3 / 0.9)
    assert not check.within_reference_error(wrong_everywhere, ref, far_in_three, 1e-4, 1e-4, 2.0, 64)[0]
    near = ref.clone()
    near[:3] = 0.2
    assert check.within_reference_error(near, ref, far_in_three, 1e-4, 1e-4, 2.0, 64)[0]
    exact = check.TruthError(0.0, 0)  # an exact reference leaves no room: KernelBench's tolerance alone
    assert not check.within_reference_error(ref + 1e-3, ref, exact, 1e-4, 1e-4, 2.0, 64)[0]


def test_a_constant_output_is_tried_without_a_tensor_of_its_size():
    assert check.constant_would_pass(torch.full((5,), 0.5), 0.5, 1e-4, 1e-4, 2)
    assert not check.constant_would_pass(torch.tensor([0.5, 0.6]), 0.5, 1e-4, 1e-4, 1)
    assert not check.constant_would_pass(torch.tensor([0.0, float("nan")]), 0.0, 1e-4, 1e-4, 1)
    assert check.constant_would_pass(torch.zeros(3, dtype=torch.int64), 0, 0, 0, 2)
    assert not check.constant_would_pass(torch.arange(3), 0, 0, 0, 2)


def test_fingerprints_tell_outputs_apart_by_a_sample_of_their_bits():
    x = torch.rand(1000, 100)
    assert check.fingerprint(x) == check.fingerprint(x.clone())
    assert check.fingerprint(x) != check.fingerprint(torch.rand(1000, 100))
    assert check.fingerprint(x) != check.fingerprint(x.reshape(100, 1000))


def test_output_fingerprints_tell_apart_outputs_that_differ_only_where_the_sample_does_not_look():
    # KernelBench's level2 93 in one sweep of two: ~1e-5 of its output not zero, none in the sample of 65,536
    zeros = torch.zeros(1 << 20)
    sparse = zeros.clone()
    sparse[1] = -0.05  # the sample takes every 16th element: not this one
    assert check.fingerprint(sparse) == check.fingerprint(zeros)  # enough for inputs, not for the lint
    assert check.output_fingerprint(sparse) != check.output_fingerprint(zeros)
    assert check.output_fingerprint(sparse) == check.output_fingerprint(sparse.clone())
    moved = zeros.clone()
    moved[2] = -0.05  # the same value elsewhere: the position-weighted sum tells them apart
    assert check.output_fingerprint(moved) != check.output_fingerprint(sparse)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.complex64, torch.int64, torch.bool, torch.uint8])
def test_the_digest_covers_every_dtype_an_output_has(dtype):
    x = (torch.arange(3000) % 7).to(dtype)
    y = x.clone()
    y[1001] = 3  # (True for bool) where 1001 % 7 made a 0
    assert check.bits_digest(x) == check.bits_digest(x.clone())
    assert check.bits_digest(x) != check.bits_digest(y)
    assert check.bits_digest(x, chunk=64) == check.bits_digest(x)


def test_the_stored_truth_is_float32_where_the_output_is_and_float64_where_it_is_float64():
    truth = [torch.tensor([1 / 3], dtype=torch.float64), torch.tensor([1 / 3], dtype=torch.float64),
             torch.tensor([3])]
    stored = check.stored_truth(truth, (torch.float32, torch.float64, torch.int64))
    assert [t.dtype for t in stored] == [torch.float32, torch.float64, torch.int64]
    assert [t.dtype for t in check.stored_truth(truth, None)] == [torch.float64, torch.float64, torch.int64]
    # The rounding is far inside float32's tolerance (1e-4): an exact float32 answer is no error against it.
    error = check.truth_error(torch.tensor([1 / 3]), stored[0], 1e-4, 1e-4, 1 << 20)
    assert error.worst == 0.0 and error.outside == 0


def test_same_bits_compares_in_chunks():
    a = torch.randn(1000)
    b = a.clone()
    assert check.same_bits(a, b, chunk=64)
    b[999] = float("nan")
    assert not check.same_bits(a, b, chunk=64)
    nan = torch.full((10,), float("nan"))
    assert check.same_bits(nan, nan.clone(), chunk=3)


def test_chunked_reductions_match_the_whole_tensors():
    """The judge's reductions over outputs go a chunk at a time (no output-sized float64 or int64 temporaries)."""
    x = torch.randn(1000)  # (the lint's mean: tests/test_lint.py)
    x[::7] = float("nan")
    assert check.nan_count(x, chunk=64) == int(x.isnan().sum()) == 143
