"""What every timing method is (harness/common/methods/method.py): a declaration alone chooses and samples nothing;
after a re-placing, a method lands one call's output anew (a graph captures again: test_cuda_graph.py)."""
import pytest

from harness.common.methods import Asked, Measured, Method


def test_a_bare_declaration_neither_chooses_nor_samples():
    bare = Method("bare", batched=False)
    with pytest.raises(NotImplementedError):
        bare.chosen(None, Measured(), Asked())
    with pytest.raises(NotImplementedError):
        bare.sample(None)


def test_after_a_re_placing_one_call_lands_its_output():
    calls = []
    Method("bare", batched=False).re_placed(type("Timer", (), {"once": lambda self: calls.append(1)})())
    assert calls == [1]
