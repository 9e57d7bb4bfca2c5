"""The correctness phase (harness/judge/trials.py), on whole pairs judged once on the CPU (conftest's judged_pairs):
integer outputs compared exactly, run-to-run spread judged against the reference's own."""

from harness.common.config import build_config


def test_integer_outputs_are_compared_exactly(judged_pairs):
    same, wrong = judged_pairs[("fx_argmax", "aa_reference")], judged_pairs[("fx_argmax", "argmin")]
    assert same["status"] == "correct" and same["max_abs_err"] == 0.0, same["error"]
    assert same["sol_pct"] is not None and same["new_err_vs_fp64"] in (None, 0.0)  # roofline in float32; no float error
    assert wrong["status"] == "incorrect" and "compared exactly" in wrong["error"], wrong["error"]


def test_nondeterministic_only_beyond_the_references_own_spread(judged_pairs):
    same, more = judged_pairs[("fx_jitter", "aa_reference")], judged_pairs[("fx_jitter", "jitters_more")]
    assert same["status"] == "correct" and "nondeterministic" not in same["flags"], same["flags"]
    assert more["status"] == "correct" and "nondeterministic" in more["flags"], more["flags"]


def test_a_run_to_run_spread_at_the_rounding_level_is_no_finding(judged_pairs):
    """The reference is deterministic, the candidate moves by ~1e-7 from run to run: far beyond the reference's
    spread (0), but a thousandth of the tolerance."""
    rounding = judged_pairs[("fx_relu", "jitters_at_rounding")]
    assert rounding["status"] == "correct" and "nondeterministic" not in rounding["flags"], rounding["flags"]


def test_an_output_that_is_an_input_in_a_later_trial_only_is_flagged():
    """The worker's aliases_input is read on every trial, not the first alone: a timed output that is an input's
    storage is then no news (judge_timing.compare_timed_output rejects it only where no trial's output was one)."""
    import contextlib
    from types import SimpleNamespace

    import torch

    from harness.judge import trials as judge_trials
    from harness.common.records import Result
    from harness.common.verdict import Status

    replies = iter([{"aliases_input": False}, {"aliases_input": True}, {"aliases_input": False}])
    judge = SimpleNamespace(cfg=build_config().replace(trials=2, wide_trials=1), result=Result(problem="p", solution="s", status=Status.CORRECT),
                            phase=lambda name: contextlib.nullcontext(), note=lambda text: None,
                            reference=SimpleNamespace(call_seed=lambda trial: trial, measure_sizes=lambda inputs, out: None),
                            workers=SimpleNamespace(
                                sandbox=SimpleNamespace(outbox=SimpleNamespace(copies=lambda xs: [x.clone() for x in xs])),
                                run_candidate=lambda shared, ref_out, seed: next(replies), release_trial=lambda: None,
                                reference_worker_first_call=lambda inputs, ref_out, seed: None))
    trials = judge_trials.Trials(judge)
    trials.problem_checked = True
    trials.reference_trial = lambda trial, wide, seed: ([torch.ones(2)], torch.ones(2), None)
    trials.check_outputs = lambda *args, **kwargs: None
    trials.first_trial_guards = lambda *args: None  # trial 1's own checks: its reply said no alias
    trials.one_trial(0, 3)
    assert "output_aliases_input" not in trials.report.flags
    trials.one_trial(1, 3)
    trials.one_trial(2, 3)
    assert trials.report.flags.count("output_aliases_input") == 1


def test_the_reference_worker_first_calls_beside_what_the_candidate_has():
    """Trial 1 calls the reference's timing worker once, on that trial's inputs and seed, just before the candidate's
    first call, while the trial's inputs, reference output and truth are held (as they are at the candidate's call: a
    library such as cuDNN chooses its algorithm by the room it finds); no later trial calls it again."""
    import contextlib
    import gc
    import weakref
    from types import SimpleNamespace

    import torch

    from harness.judge import trials as judge_trials
    from harness.common.records import Result
    from harness.common.verdict import Status

    held, events, alive = {}, [], []

    def first_call(inputs, ref_out, seed):
        assert ref_out is held["ref_out"]()  # that trial's reference output: the sizes its worker poisons for
        gc.collect()
        alive.append({name: ref() is not None for name, ref in held.items()})
        events.append(("reference worker", float(inputs[0][0]), seed))

    def reference_trial(trial, wide, seed):
        inputs, out, truth = [torch.full((2,), float(trial))], torch.ones(2), torch.zeros(2)
        held.update(ref_out=weakref.ref(out), truth=weakref.ref(truth))
        return inputs, out, truth

    def run_candidate(shared, ref_out, seed):
        events.append(("candidate", float(shared[0][0]), seed))
        return {"items": [torch.ones(2)]}

    judge = SimpleNamespace(cfg=build_config().replace(trials=2, wide_trials=1),
                            result=Result(problem="p", solution="s", status=Status.CORRECT),
                            phase=lambda name: contextlib.nullcontext(), note=lambda text: None,
                            reference=SimpleNamespace(call_seed=lambda trial: 100 + trial, measure_sizes=lambda inputs, out: None),
                            workers=SimpleNamespace(
                                sandbox=SimpleNamespace(outbox=SimpleNamespace(copies=lambda xs: [x.clone() for x in xs])),
                                run_candidate=run_candidate, reference_worker_first_call=first_call,
                                release_trial=lambda: None))
    trials = judge_trials.Trials(judge)
    trials.problem_checked = True
    trials.reference_trial = reference_trial
    trials.check_outputs = lambda *args, **kwargs: None
    trials.first_trial_guards = lambda *args: None
    for trial in range(3):
        trials.one_trial(trial, 3)
    assert events == [("reference worker", 0.0, 100), ("candidate", 0.0, 100), ("candidate", 1.0, 101),
                      ("candidate", 2.0, 102)]
    assert alive == [{"ref_out": True, "truth": True}]


def test_a_trial_the_judge_ran_out_of_memory_in_runs_once_more_after_every_cache_is_handed_back():
    """An out-of-memory in the judge (an honest candidate's cache, or the reference's, left it short on a small GPU)
    is not blamed at once: the candidate's worker lets go of the trial's call, every process hands its cache back
    (with the failed attempt's tensors already let go), and the trial runs again; a second shortage goes on to be
    attributed (PairWorkers.blame_for_memory)."""
    import contextlib
    import weakref
    from types import SimpleNamespace

    import pytest
    import torch

    from harness.judge import trials as judge_trials
    from harness.common.records import Result
    from harness.common.verdict import Status

    events, first_out, shortages = [], [], iter([1, 0, 1, 1])

    def run_candidate(shared, ref_out, seed):
        events.append("candidate")
        out = torch.ones(2)
        first_out.append(weakref.ref(out))
        return {"items": [out]}

    def check_outputs(*args, **kwargs):
        trials.report.flags.append("output_aliases_input")  # a finding of the attempt: found once, not once an attempt
        if next(shortages):
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 6.00 GiB")

    def release_all_caches():
        events.append(("released", first_out[-1]() is None))

    judge = SimpleNamespace(cfg=build_config().replace(trials=2, wide_trials=1, timeout=1.0),
                            result=Result(problem="p", solution="s", status=Status.CORRECT),
                            phase=lambda name: contextlib.nullcontext(), note=lambda text: events.append("note"),
                            reference=SimpleNamespace(call_seed=lambda trial: trial, measure_sizes=lambda inputs, out: None),
                            workers=SimpleNamespace(
                                sandbox=SimpleNamespace(outbox=SimpleNamespace(copies=lambda xs: [x.clone() for x in xs]),
                                                        request=lambda op, timeout: events.append(op) or {"ok": True}),
                                expect_ok=lambda reply: reply, release_all_caches=release_all_caches,
                                run_candidate=run_candidate, release_trial=lambda: None,
                                reference_worker_first_call=lambda inputs, ref_out, seed: None))
    trials = judge_trials.Trials(judge)
    trials.problem_checked = True
    trials.reference_trial = lambda trial, wide, seed: ([torch.ones(2)], torch.ones(2), None)
    trials.check_outputs = check_outputs
    trials.first_trial_guards = lambda *args: None
    trials.trial_retried_when_full(0, 3)
    assert events == ["candidate", "note", "release_outputs", ("released", True), "candidate"]
    assert trials.report.flags == ["output_aliases_input"]
    with pytest.raises(torch.cuda.OutOfMemoryError):  # short twice: the judge's run() attributes it
        trials.trial_retried_when_full(1, 3)


def trials_without_a_truth(ref_error=None):
    """Trials whose judge has no float64 truth to give (it does not fit), and, if given, the reference's measured error
    against float64 for output 0 (as the trials leave it)."""
    import contextlib
    from types import SimpleNamespace

    from harness.judge import trials as judge_trials
    from harness.common.records import Result
    from harness.common.verdict import Status

    result = Result(problem="p", solution="s", status=Status.CORRECT)
    judge = SimpleNamespace(cfg=build_config().replace(compare_chunk_elems=1 << 20, truth_accuracy_factor=2.0),
                            result=result, phase=lambda name: contextlib.nullcontext(),
                            reference=SimpleNamespace(tolerance=lambda ref: {"atol": 1e-4, "rtol": 1e-4}, truth=lambda inputs, seed: None),
                            note=lambda text: text in result.notes or result.notes.append(text), workers=None)
    trials = judge_trials.Trials(judge)
    if ref_error is not None:
        trials.ref_err_by_output[0] = ref_error
    return trials


def test_with_no_truth_for_its_inputs_an_output_within_the_references_own_error_passes_flagged():
    """A timed round's output outside 1e-4 of the judge's reference where no float64 truth fits (two cuDNN algorithms'
    TF32 convolutions): correct, flagged, with a note, when the trials measured the reference as far from float64 as
    that allows; incorrect, saying how far, when they measured it exact, never had a truth, or it lies further."""
    import pytest
    import torch

    from harness.common import check
    from harness.judge import trials as judge_trials
    from harness.common.verdict import Status, Verdict

    ref = torch.linspace(-1, 1, 1000)
    apart = ref + 3e-4 * torch.sign(torch.sin(torch.arange(1000.0)))  # ~1.5-3 tolerances off, everywhere
    tf32_like = trials_without_a_truth(check.TruthError(33.0, 400))
    for round_ in (4, 8):  # the note once
        tf32_like.check_outputs([ref], ref, {"items": [apart]}, f"timing round {round_}", None)
    result = tf32_like.ctx.result
    assert len(result.notes) == 1 and result.notes[0].startswith(judge_trials.WITHIN_REFERENCE_ERROR + "timing round 4")
    assert tf32_like.report.flags == ["within_reference_error"]
    for trials, bad, says in ((trials_without_a_truth(check.TruthError(0.0, 0)), apart, "beyond the room"),
                              (trials_without_a_truth(), apart, None),
                              (tf32_like, ref + 0.1, "beyond the room")):  # 500-1000 tolerances: beyond 3 x 33
        with pytest.raises(Verdict) as raised:
            trials.check_outputs([ref], ref, {"items": [bad]}, "timing round 9", None)
        assert raised.value.status == Status.INCORRECT and "timing round 9" in raised.value.error
        assert (says in raised.value.error) if says else "float64" not in raised.value.error, raised.value.error


def test_the_room_is_the_ordinary_trials_worst_and_never_excuses_a_candidate_the_truth_convicts():
    """The reference's error per output is the maximum over the ordinary trials that had a truth (a wide trial's, on
    inputs 3-6x as large, is not what a timed round draws); where a truth is there, it alone decides."""
    import pytest
    import torch

    from harness.common import check
    from harness.common.verdict import Verdict

    truth = torch.linspace(-1, 1, 1000, dtype=torch.float64)
    off = (truth + 3e-3 * torch.sign(torch.cos(torch.arange(1000.0, dtype=torch.float64)))).float()  # 15-30 tolerances
    exact, timed = truth.float(), truth.float() + 3e-4  # the timed output: 1.5-3 tolerances from the reference
    trials = trials_without_a_truth()
    trials.check_outputs([truth], off, {"items": [off]}, "trial 6/7 (wide inputs)", 5, truth=truth.float(), wide=True)
    with pytest.raises(Verdict):  # only a wide trial measured the reference: no room to go by
        trials.check_outputs([truth], exact, {"items": [timed]}, "timing round 1", None)
    trials.check_outputs([truth], off, {"items": [off]}, "trial 1/7", 0, truth=truth.float())
    trials.check_outputs([truth], exact, {"items": [exact]}, "trial 2/7", 1, truth=truth.float())  # exact: the max stays
    assert trials.ref_err_by_output[0].worst > 14
    trials.check_outputs([truth], exact, {"items": [timed]}, "timing round 2", None)
    generous = trials_without_a_truth(check.TruthError(1e3, 1000))
    with pytest.raises(Verdict) as raised:  # 250-500 tolerances from the truth, 15-30 for the reference: not as accurate
        generous.check_outputs([truth], off, {"items": [(truth + 0.05).float()]}, "trial 3/7", 2, truth=truth.float())
    assert "against float64" in raised.value.error and "within_reference_error" not in generous.report.flags


def test_a_second_attempt_forgets_the_trials_findings_but_not_the_problems():
    from types import SimpleNamespace

    from harness.judge.reports import CorrectnessReport
    from harness.judge.trials import Trials

    trials = Trials(SimpleNamespace(cfg=build_config(), phase=None, reference=None, workers=None, note=None))
    first = CorrectnessReport(trials=None, flags=["degenerate_problem", "nondeterministic"], max_abs_err=3.0,
                              problem_findings=["constant"])
    trials.ref_err = 5.0
    second = trials.afresh(first)
    assert second.flags == ["degenerate_problem"] and second.problem_findings == ["constant"]
    assert second.max_abs_err is None and trials.ref_err == 0.0 and first.flags[-1] == "nondeterministic"
