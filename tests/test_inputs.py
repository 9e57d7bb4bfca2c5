"""Seeded inputs: secret-derived seeds, the problem's distribution and the wide one; the private copies a worker times."""
import types

import pytest
import torch

from harness.common import inputs


def problem(get_inputs, get_init_inputs=lambda: [4]):
    return types.SimpleNamespace(get_inputs=get_inputs, get_init_inputs=get_init_inputs)


UNIT = problem(lambda: [torch.rand(64, 8), torch.arange(5), 3])


def test_trial_seeds_depend_on_the_secret_the_problem_and_the_trial():
    seeds = {inputs.trial_seed(s, p, t) for s in (1, 2) for p in ("relu", "gelu") for t in (0, 1)}
    assert len(seeds) == 8 and all(0 <= s < 2**63 for s in seeds)
    # The same in every process and version (sha256 of "secret:problem:trial"): a judge and its rerun agree.
    assert inputs.trial_seed(1, "relu", 0) == 6612231605125024570


def test_the_same_seed_gives_the_same_inputs_and_another_seed_others():
    a, b, c = (inputs.make_inputs(UNIT, seed, torch.device("cpu")) for seed in (7, 7, 8))
    assert torch.equal(a[0], b[0]) and not torch.equal(a[0], c[0])
    assert torch.equal(a[1], torch.arange(5)) and a[2] == 3  # integers and non-tensors as the problem made them


def test_wide_inputs_leave_the_unit_interval_and_spare_integer_tensors():
    wide = inputs.make_inputs(UNIT, 7, torch.device("cpu"), wide_scale=3.0)
    assert wide[0].min() < -1.0 and wide[0].max() > 2.0
    assert torch.equal(wide[1], torch.arange(5))


def structured_inputs():
    """Tensors whose structure the problem made on purpose, and one plain draw."""
    a = torch.randn(16, 16)
    return [(a + a.T) / 2, torch.tril(torch.randn(16, 16)), torch.rand(64).exp(), torch.randint(0, 5, (32,)).float(),
            torch.randn(4, 10).softmax(dim=-1), torch.rand(8, 8).cuda() if torch.cuda.is_available() else torch.rand(8, 8).cpu()]


def test_wide_inputs_keep_the_structure_the_problem_made():
    plain, wide = (inputs.make_inputs(problem(structured_inputs), 11, torch.device("cpu"), scale) for scale in (None, 3.0))
    symmetric, lower, positive, labels, probabilities, drawn = wide
    assert torch.equal(symmetric, symmetric.T) and not torch.allclose(symmetric, plain[0])
    assert torch.equal(lower, torch.tril(lower)) and lower.abs().max() > plain[1].abs().max()
    assert positive.min() > 0 and positive.max() > 3 * plain[2].max() * 0.99
    assert torch.equal(labels, plain[3]) and torch.equal(probabilities, plain[4])  # labels and probabilities as they are
    assert drawn.min() < 0 < drawn.max() and 2.0 < drawn.std() < 4.0  # a plain draw: both signs, std ~ the scale


def test_the_draw_tracker_follows_a_draw_through_moves_and_not_through_changes():
    tracker = inputs.DrawTracker()
    with tracker:
        moved = torch.randn(4, 4).float().contiguous().T
        changed, redrawn = torch.rand(4).abs_(), torch.empty(4).normal_()
        made = torch.rand(4) * 2
    assert tracker.is_plain_draw(moved) and tracker.is_plain_draw(redrawn)
    assert not tracker.is_plain_draw(changed) and not tracker.is_plain_draw(made)


def test_precision_casts_float_inputs_only():
    cast = inputs.make_inputs(UNIT, 7, torch.device("cpu"), dtype=torch.bfloat16)
    assert cast[0].dtype == torch.bfloat16 and cast[1].dtype == torch.int64


def test_a_problem_that_returns_no_list_is_a_problem_error():
    with pytest.raises(inputs.ProblemError, match="expected a list"):
        inputs.make_inputs(problem(lambda: torch.ones(2)), 0, torch.device("cpu"))
    with pytest.raises(inputs.ProblemError, match="get_init_inputs"):
        inputs.init_inputs(problem(lambda: [], lambda: 4))


def test_nbytes_counts_nested_tensors():
    assert inputs.nbytes([torch.ones(4), (torch.ones(2, dtype=torch.float64), 3), {"x": torch.ones(1)}]) == 16 + 16 + 4


def test_moving_copies_are_private_copies_laid_out_as_clones():
    originals = [torch.randn(64, 32), torch.randn(32, 64).t(), torch.randn(1, 16).expand(8, 16),
                 torch.zeros(0, 3), torch.rand(10) > 0.5, torch.arange(7), 3, "text"]
    copies = inputs.MovingCopies(originals).tensors
    for original, copy in zip(originals, copies):
        if not isinstance(original, torch.Tensor):
            assert copy == original
            continue
        clone = original.clone()
        assert copy.dtype == clone.dtype and copy.shape == clone.shape and copy.stride() == clone.stride()
        assert torch.equal(copy, original)
        assert original.numel() == 0 or copy.untyped_storage().data_ptr() != original.untyped_storage().data_ptr()
    copies[0].zero_()
    assert originals[0].abs().sum() > 0


def test_moving_copies_move_on_refill_unless_told_to_stay():
    moving = inputs.MovingCopies([torch.randn(1 << 18)])  # 1 MiB: 257 places to lie
    first = moving.tensors[0].data_ptr()
    fresh = [torch.randn(1 << 18)]
    stayed = moving.refill(fresh, move=False)[0]
    assert stayed.data_ptr() == first and torch.equal(stayed, fresh[0])
    places = {moving.refill(fresh, move=True)[0].data_ptr() for _ in range(8)}
    assert len(places) > 1 and torch.equal(moving.tensors[0], fresh[0])
    buffer = moving.buffers[0]
    assert all(p % inputs.PLACEMENT_ALIGN == 0 for p in places)
    assert all(buffer.data_ptr() <= p <= buffer.data_ptr() + buffer.numel() - (1 << 20) for p in places)
