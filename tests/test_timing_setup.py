"""The timing_setup stage (harness/judge/timing_setup.py): each side's timing method agreed with the other's, and the
runtime trace's failures, on stand-ins for the workers."""
import contextlib
from types import SimpleNamespace

import pytest
import torch

from harness.common.config import build_config
from harness.judge.timing_setup import TimingSetup
from harness.common.verdict import Status, Verdict


def traced(failure: Verdict):
    """A TimingSetup whose candidate's trace request ends in `failure` (the reference's traces fine)."""
    def expect_ok(reply):
        if reply == "candidate":
            raise failure
        return {"ops": ["aten::sigmoid"], "kernels": []}

    return SimpleNamespace(reference_side=contextlib.nullcontext, cfg=build_config().replace(timeout=1.0), expect_ok=expect_ok,
                           ref_sandbox=SimpleNamespace(request=lambda op, timeout: "reference"),
                           sandbox=SimpleNamespace(request=lambda op, timeout: "candidate"),
                           device=torch.device("cpu"), report=SimpleNamespace(backend=None))


def test_a_trace_that_fails_leaves_the_flag_unset_unless_the_worker_crashed():
    """The runtime trace is best-effort: a profiler that cannot start, or runs out of GPU memory (its share of the
    candidate's worker judged within the allowance: a harness_error), blames no one; a crash ends the pair."""
    for failure in (Verdict(Status.RUNTIME_ERROR, "forward raised RuntimeError: CUPTI unavailable"),
                    Verdict(Status.HARNESS_ERROR, "forward raised OutOfMemoryError: CUDA out of memory. ... "
                                                  "not the candidate's doing")):
        assert TimingSetup.uses_only_reference_ops(traced(failure)) is False
    for failure in (Verdict(Status.CRASH, "the worker died"), Verdict(Status.HARNESS_ERROR, "the judge's own bug")):
        with pytest.raises(Verdict):
            TimingSetup.uses_only_reference_ops(traced(failure))


class SideTimers:
    """A TimingSetup whose sides' methods are set, and whose workers' re-preparations are recorded."""

    def __new__(cls, ref: str, new: str, again: dict):
        from types import SimpleNamespace
        import contextlib

        from harness.judge.timing_setup import TimingSetup

        pair = TimingSetup.__new__(TimingSetup)
        pair.report = SimpleNamespace(ref_timer=ref, ref_batch=None if ref == "cuda_event" else 8, new_timer=new,
                                      new_batch=None if new == "cuda_event" else 8)
        pair.sandbox, pair.ref_sandbox, pair.calls = "new", "ref", []
        pair.device = torch.device("cpu")  # no room to measure: the host's memory is not the GPU's
        pair.reference_side = contextlib.nullcontext

        def prepare_again(sandbox, allow_graph=False, batched=False, batch=None, windows=None):
            if windows is not None:
                pair.calls.append((sandbox, allow_graph, "windows", windows))
                return getattr(pair.report, f"{sandbox}_timer"), windows
            if batch is not None:
                pair.calls.append((sandbox, allow_graph, "batch", batch))
                return getattr(pair.report, f"{sandbox}_timer"), batch
            pair.calls.append((sandbox, allow_graph, batched))
            if not batched:  # told nothing, a call that measures long (a launch-bound one on a busy host) is timed alone
                return "cuda_event", 16
            return again[(sandbox, allow_graph)], 8

        pair.prepare_again = prepare_again
        return pair


@pytest.mark.parametrize("ref, new, again, calls, methods", [
    # a reference timed alone (a disturbed warm-up) against a graph: batched, graphs allowed
    ("cuda_event", "cuda_graph", {("ref", True): "cuda_graph"}, [("ref", True, True)], ("cuda_graph", "cuda_graph")),
    # a candidate timed alone against batched events: batched events too
    ("batched_events", "cuda_event", {("new", False): "batched_events"}, [("new", False, True)],
     ("batched_events", "batched_events")),
    # forced into batching, the candidate's call cannot be captured: the reference gives up its graph, batched still
    ("cuda_graph", "cuda_event", {("new", True): "batched_events", ("ref", False): "batched_events"},
     [("new", True, True), ("ref", False, True)], ("batched_events", "batched_events")),
    # a candidate whose call cannot be captured (a legacy-default-stream launch) against a graph: the same
    ("cuda_graph", "batched_events", {("ref", False): "batched_events"}, [("ref", False, True)],
     ("batched_events", "batched_events")),
    ("cuda_event", "cuda_event", {}, [], ("cuda_event", "cuda_event")),  # both alone: nothing to do
])
def test_both_sides_are_timed_the_same_way(ref, new, again, calls, methods):
    pair = SideTimers(ref, new, again)
    pair.same_method_both_sides()
    assert pair.calls == calls and (pair.report.ref_timer, pair.report.new_timer) == methods


@pytest.mark.parametrize("method, ref_batch, new_batch, calls", [
    ("cuda_graph", 12, 8, [("ref", True, "batch", 8)]),  # the reference re-captured with the candidate's batch
    ("batched_events", 6, 9, [("new", False, "batch", 6)]),
    ("cuda_graph", 8, 8, []),  # already the same
])
def test_batched_sides_time_the_same_number_of_calls_a_window(method, ref_batch, new_batch, calls):
    pair = SideTimers(method, method, {})
    pair.report.ref_batch, pair.report.new_batch = ref_batch, new_batch
    pair.same_method_both_sides()
    assert pair.calls == calls
    assert pair.report.ref_batch == pair.report.new_batch == min(ref_batch, new_batch)


def test_a_graph_that_fails_when_captured_again_with_the_other_batch_leaves_both_sides_on_plain_launches():
    pair = SideTimers("cuda_graph", "cuda_graph", {})
    pair.report.ref_batch, pair.report.new_batch = 12, 8
    answers = iter([("batched_events", 8), ("batched_events", 8)])  # the reference's capture at batch 8 fails

    def prepare_again(sandbox, allow_graph=False, batched=False, batch=None, windows=None):
        pair.calls.append((sandbox, allow_graph, batch))
        return next(answers)

    pair.prepare_again = prepare_again
    pair.same_method_both_sides()
    assert pair.calls == [("ref", True, 8), ("new", False, 8)]
    assert (pair.report.ref_timer, pair.report.new_timer) == ("batched_events", "batched_events")
    assert pair.report.ref_batch == pair.report.new_batch == 8


def test_a_candidate_timed_in_single_windows_takes_as_many_a_sample_as_the_reference():
    pair = SideTimers("cuda_event", "cuda_event", {})
    chosen = {"ref": ("cuda_event", 5)}  # the reference's worker chose 5 windows a sample

    def prepare_side(reference, **how):
        side = "ref" if reference else "new"
        pair.calls.append((side, how))
        method, batch = chosen[side] if reference else ("cuda_event", how.get("windows"))
        setattr(pair.report, f"{side}_timer", method), setattr(pair.report, f"{side}_batch", batch)

    pair.prepare_side = prepare_side
    pair.prepare_sides()
    assert pair.calls == [("ref", {"allow_graph": True}), ("new", {"allow_graph": True, "windows": 5})]
    assert pair.report.ref_batch == pair.report.new_batch == 5
    chosen["ref"] = ("cuda_graph", 12)  # a batched reference: no windows for the candidate's worker
    pair.calls, pair.same_method_both_sides = [], lambda: None
    pair.prepare_sides()
    assert pair.calls[1] == ("new", {"allow_graph": True, "windows": None})


def test_the_room_left_after_the_references_warm_up_is_checked_before_the_candidates(monkeypatch):
    """prepare_sides measures the free memory around the reference's warm-up and asks PairMemory before the
    candidate's worker warms up: a pair it skips never times its candidate."""
    from harness.judge import timing_setup as judge_timing_setup

    frees, read_after = iter([10 << 30, 4 << 30]), []  # read_after: how many warm-ups each reading followed
    asked, prepared = [], []

    def free_memory(device):
        read_after.append(len(prepared))
        return next(frees)

    monkeypatch.setattr(judge_timing_setup, "free_memory", free_memory)
    setup = TimingSetup.__new__(TimingSetup)
    setup.device = torch.device("cuda", 0)

    def check_room_alike(*free):
        asked.append(free)
        raise Verdict(Status.SKIPPED, "no room")

    setup.reference = SimpleNamespace(memory=SimpleNamespace(check_room_alike=check_room_alike))
    setup.prepare_side = lambda reference, **how: prepared.append(reference)
    with pytest.raises(Verdict):
        setup.prepare_sides()
    assert asked == [(10 << 30, 4 << 30)] and prepared == [True] and read_after == [0, 1]
