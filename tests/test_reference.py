"""The reference side of a pair (harness/judge/reference.py), built from real problem files: no stand-in judge."""
import contextlib

import pytest
import torch

from support import FIXTURES, pair_job


def reference_of(problem: str, **job):
    """A Reference of a fixture problem on the CPU, loaded and built; its notes in `.notes_seen`."""
    from harness.common.devices import torch_device
    from harness.judge.reference import Reference

    job = pair_job(problem=problem, problem_path=str(FIXTURES / "problems" / f"{problem}.py"), **job)
    notes: list = []
    reference = Reference(job, job.config, torch_device("cpu"), None, notes.append, lambda name: contextlib.nullcontext())
    reference.notes_seen = notes
    reference.load()
    reference.build()
    return reference


def test_a_call_is_the_problems_model_on_the_trials_secret_inputs():
    reference = reference_of("fx_linear")
    inputs = reference.make_inputs(0, wide=False)
    assert torch.equal(inputs[0], reference.make_inputs(0, wide=False)[0])  # one trial, one draw
    assert not torch.equal(inputs[0], reference.make_inputs(1, wide=False)[0])
    assert not torch.equal(inputs[0], reference_of("fx_linear", secret=8).make_inputs(0, wide=False)[0])
    out = reference.call(inputs, seed=reference.call_seed(0))
    assert torch.allclose(out, torch.sigmoid(reference.model.linear(inputs[0])))


def test_the_truth_is_the_model_in_float64_and_comes_before_the_trials_inputs():
    reference = reference_of("fx_linear")
    truth, drawn = reference.truth_first(0, wide=False, seed=None)
    inputs = reference.make_inputs(0, wide=False)
    from harness.common import check

    assert drawn == check.input_fingerprint(inputs)
    exact = torch.sigmoid(reference.model.linear.double()(inputs[0].double()))
    assert torch.allclose(check.items(truth)[0].double(), exact, atol=1e-6)


def test_a_reference_that_draws_random_numbers_has_no_truth():
    reference = reference_of("fx_dropout")
    inputs = reference.make_inputs(0, wide=False)
    reference.call(inputs, seed=1, watch_rng=True)
    assert reference.random_reference
    assert reference.truth(inputs, seed=1) is None


def test_a_stateful_problem_is_found_and_its_calls_restart_from_the_kept_states():
    from harness.common import semantics

    reference = reference_of("fx_stateful_rnn")
    inputs = reference.make_inputs(0, wide=False)
    before = semantics.state_fingerprint(reference.model)
    out = reference.call(inputs, seed=1)
    reference.check_stateful(before, inputs, out, seed=1)
    assert reference.stateful and any("stateful problem" in n for n in reference.notes_seen)
    assert torch.equal(reference.call_again(inputs, seed=1), out)  # from the state as constructed
    reference.start_timing()
    first = reference.timed_call(inputs)
    assert torch.equal(reference.timed_call(inputs), first)  # each timed call from timing's start


def test_a_stateless_problem_is_not_stateful():
    from harness.common import semantics

    reference = reference_of("fx_linear")
    inputs = reference.make_inputs(0, wide=False)
    before = semantics.state_fingerprint(reference.model)
    reference.check_stateful(before, inputs, reference.call(inputs, seed=1), seed=1)
    assert reference.stateful is False


def test_the_problems_own_failure_is_the_harnesss_or_a_skip_for_want_of_a_gpu():
    from harness.common.verdict import Status, Verdict

    reference = reference_of("fx_linear")
    assert reference.failed("its forward", RuntimeError("bad shape")).status == Status.HARNESS_ERROR
    assert reference.failed("Model(...)", AssertionError("Torch not compiled with CUDA enabled")).status == Status.SKIPPED
    with pytest.raises(Verdict) as raised:
        reference_of("fx_no_model")
    assert raised.value.status == Status.HARNESS_ERROR and "defines no Model" in raised.value.error


def test_each_block_draws_its_own_timing_seed():
    seeds = {reference_of("fx_linear", block=block).timing_seed() for block in (1, 2, 3)}
    assert len(seeds) == 3
