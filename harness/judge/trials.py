"""The correctness phase of a pair: trials on fresh secret-seeded inputs; each output compared with the reference's
and, where that fails, with the float64 truth; the guards (mutation, aliasing, determinism); the problem's own checks
(the lint's: is it degenerate?); and a second attempt with the reference's weights.

PairJudge (judge.py) runs it before timing, and PairTiming checks timed outputs with `check_outputs`. It never imports
judge.py."""
from __future__ import annotations

import math

import torch

from harness.common import check, semantics
from harness.judge import lint
from harness.common.records import one_line
from harness.common.verdict import Status, Verdict, flag

NONDETERMINISM_RATIO = 4.0  # run-to-run spread beyond this many times the reference's own: nondeterministic ...
# ... and at least this share of the tolerance (as for reduced_precision): a spread at the rounding level (the order of
# cuDNN's atomic adds, which one process's choice of algorithm may have and another's not) is no finding. On the H100,
# KernelBench's 93_ConvTranspose2d_Add_Min_GELU_Multiply against itself was flagged for two runs 2.4e-7 apart.
NONDETERMINISM_SHARE = 0.01
# Findings of one attempt (the second, with the reference's weights, starts without them).
TRIAL_FLAGS = ("output_aliases_input", "nondeterministic", "reduced_precision", "accurate_vs_fp64",
               "within_reference_error")
ATTEMPT_FIELDS = ("max_abs_err", "max_rel_err", "ref_err_vs_fp64", "new_err_vs_fp64", "trials")
WITHIN_REFERENCE_ERROR = "within the reference's own error: "  # a note's start (Trials.within_reference_error)
RANDOM_REFERENCE = ("the reference draws random numbers (Dropout in training mode, say): each correctness call of "
                    "both sides was seeded alike, no float64 truth was used, and timed outputs were not checked")


class Trials:
    """The correctness phase of one pair, run by its PairJudge (its workers, inputs, reference and truth)."""

    def __init__(self, judge):
        self.judge, self.cfg, self.result, self.phase = judge, judge.cfg, judge.result, judge.phase
        self.reference = judge.reference
        self.problem_checked = False  # the problem's own checks run in the first attempt's first two trials
        self.problem_check = None  # lint.ProblemCheck, made at trial 1
        self.ref_err = self.new_err = 0.0  # running maxima of the errors against float64, in tolerances
        self.ref_err_by_output = {}  # {output index: the reference's TruthError, maxima over the ordinary trials}

    def run(self) -> None:
        """Every trial with the candidate's own weights (KernelBench's rule). On a wrong value, once more with the
        reference's weights copied over its same-named ones (a candidate that drew them in another order): a pass then
        is correct with the flag weights_copied; a failure is the first attempt's verdict."""
        try:
            self.all_trials()
        except Verdict as first:
            if not first.weights_may_explain:
                raise
            self.judge.restart_state()
            if not self.judge.adopt_reference_weights():
                raise
            kept = self.forget_findings()
            try:
                self.all_trials()
            except Verdict as second:
                self.restore_findings(kept)  # the verdict is the first attempt's: so are its figures
                self.result.notes.append(f"tried again with the reference's weights copied over its own: "
                                         f"{one_line(second.error, 200)}")
                raise first from None
            self.result.flags.append(flag("weights_copied"))

    def all_trials(self) -> None:
        total = self.cfg.total_trials
        for trial in range(total):
            self.trial_retried_when_full(trial, total)
        self.result.trials = total
        if self.new_err > 0.01 and self.new_err > self.cfg.reduced_precision_ratio * self.ref_err:
            # far less accurate, and a visible share of the tolerance
            self.result.flags.append(flag("reduced_precision"))

    def forget_findings(self) -> dict:
        """What the first attempt found of the candidate, forgotten before the second; returned, to restore."""
        r = self.result
        kept = {name: getattr(r, name) for name in ATTEMPT_FIELDS} | {"flags": list(r.flags)}
        r.flags = [f for f in r.flags if f not in TRIAL_FLAGS]
        for name in ATTEMPT_FIELDS:
            setattr(r, name, None)
        self.ref_err = self.new_err = 0.0
        self.ref_err_by_output = {}
        return kept

    def restore_findings(self, kept: dict) -> None:
        for name, value in kept.items():
            setattr(self.result, name, value)

    def trial_retried_when_full(self, trial: int, total: int) -> None:
        """One trial; once more if the judge ran out of GPU memory, after the candidate's worker let go of the trial's
        call and every process handed its cached blocks back (as timing's retried_when_full: an honest candidate's
        cache, or the reference's, can leave the judge short on a small GPU). A second shortage is the judge's to
        attribute (blame_for_memory)."""
        flags = list(self.result.flags)  # what the failed attempt found is found again (once) by the second
        try:
            return self.one_trial(trial, total)
        except torch.cuda.OutOfMemoryError as exc:
            self.judge.note(f"trial {trial + 1}: the judge ran out of GPU memory ({one_line(str(exc), 120)}); tried "
                            f"once "
                            f"more after every cache was handed back")
        # (out of the except block first: its traceback holds the trial's tensors)
        self.result.flags = flags
        self.judge.expect_ok(self.judge.sandbox.request("release_outputs", self.cfg.timeout))
        self.judge.release_all_caches()
        self.one_trial(trial, total)

    def one_trial(self, trial: int, total: int) -> None:
        """Fresh secret-seeded inputs, the reference's output, the candidate's, and every check."""
        wide = trial >= self.cfg.trials
        label = f"trial {trial + 1}/{total}" + (" (wide inputs)" if wide else "")
        seed = self.reference.call_seed(trial)
        with self.phase("correctness.reference"):
            inputs, ref_out, truth = self.reference_trial(trial, wide, seed)
        if trial == 0:
            self.reference.measure_sizes(inputs, ref_out)
        if not self.problem_checked:
            self.check_problem(trial, total, check.items(ref_out))
        if trial == 0:  # beside what the candidate's first call will have here: see judge.reference_worker_first_call
            with self.phase("correctness.reference_worker"):
                self.judge.reference_worker_first_call(inputs, ref_out, seed)
        try:
            with self.phase("correctness.candidate"):
                shared = self.judge.sandbox.outbox.copies(inputs)
                reply = self.judge.run_candidate(shared, ref_out, seed)
        except Verdict as verdict:
            verdict.error = f"{label}: {verdict.error}"
            raise
        with self.phase("correctness.checks"):
            if check.mutated_inputs(inputs, shared):
                raise Verdict(Status.INCORRECT, f"{label}: the candidate changed its inputs", "input_mutated")
            self.check_outputs(inputs, ref_out, reply, label, seed, truth=truth, wide=wide)
            del truth
            if trial == 0:
                self.first_trial_guards(shared, inputs, reply, ref_out, seed)
            elif reply.get("aliases_input"):
                # The worker's word, read on every trial: a candidate that returns an input on some inputs only (an
                # identity where it holds) is no cheat when its timed output is an input's (compare_timed_output).
                self.flag_once("output_aliases_input")
        del inputs, shared, reply, ref_out
        with self.phase("correctness.release"):
            self.judge.release_trial()

    def reference_trial(self, trial: int, wide: bool, seed: int) -> tuple:
        """The trial's inputs, the reference's output and the stored float64 truth (None where there is none). A
        reference that rejects the wide inputs (a domain error: values outside [0, 1] for a loss, say) gets the trial's
        ordinary inputs instead, and the result says so."""
        try:
            return self.reference_on(trial, wide, seed)
        except Verdict as verdict:
            if not wide or verdict.status != Status.HARNESS_ERROR:  # (the problem's failure: its forward raised)
                raise
            self.judge.note(f"the reference rejected the wide inputs ({one_line(verdict.error, 160)}): those trials "
                            f"ran "
                            f"on get_inputs() as it is")
        return self.reference_on(trial, False, seed)

    def reference_on(self, trial: int, wide: bool, seed: int) -> tuple:
        """(inputs, reference output, truth): the truth first (Reference.truth_first), the inputs drawn again, which
        must be the ones the truth saw (else there is no truth: a get_inputs() that seeds itself from the clock)."""
        first = self.reference.truth_first(trial, wide, seed)
        inputs = self.reference.make_inputs(trial, wide)
        before = semantics.state_fingerprint(self.reference.model) if trial == 0 else None
        ref_out = self.reference.call(inputs, seed, watch_rng=trial == 0)
        if before is not None:
            self.reference.check_stateful(before, inputs, ref_out, seed)
        if first is None or self.reference.random_reference:
            return inputs, ref_out, None
        truth, drawn = first
        if drawn != check.input_fingerprint(inputs):
            self.judge.note("no float64 truth: get_inputs() gave other inputs under the same seed")
            return inputs, ref_out, None
        return inputs, ref_out, truth

    def check_problem(self, trial: int, total: int, outputs: list) -> None:
        """The lint's checks on the reference's own outputs: would zeros or a constant pass (first trial), does the
        output ignore its inputs (first two trials)? Findings flag the pair degenerate_problem."""
        if trial == 0:  # afresh: a second attempt, after a first one that ended in its first trial, starts again here
            self.problem_check = lint.ProblemCheck(self.cfg, self.judge.job.problem)
            if self.reference.random_reference and RANDOM_REFERENCE not in self.result.notes:
                self.result.notes.append(RANDOM_REFERENCE)
        self.problem_check.see(outputs)
        self.problem_checked = trial == 1 or total == 1
        if self.problem_check.findings:
            self.result.problem_findings = list(self.problem_check.findings)
            self.flag_once("degenerate_problem")

    def check_outputs(self, inputs: list, ref_out, reply: dict, label: str, seed, truth=None, wide=False) -> None:
        """Each output within tolerance of the reference's, or at least as accurate against the float64 truth
        (check.as_accurate: then accurate_vs_fp64), or, where no truth fits, no further from the reference's than the
        reference's own error lets it be (within_reference_error); else incorrect, with the first bad element and both
        errors. A trial brings its truth (the errors are kept; the reference's per output from ordinary inputs, those
        a timed round draws); a timed output's is computed only when the comparison failed."""
        new_items, failures = reply["items"], []
        for i, (ref, new) in enumerate(zip(check.items(ref_out), new_items)):
            tol = self.reference.tolerance(ref)
            comparison = check.compare(ref, new, tol["atol"], tol["rtol"], self.cfg.compare_chunk_elems)
            self.result.max_abs_err = max(self.result.max_abs_err or 0.0, comparison.max_abs_err)
            self.result.max_rel_err = max(self.result.max_rel_err or 0.0, comparison.max_rel_err)
            if not comparison.ok:
                failures.append((i, ref, new, comparison))
        if truth is None and failures:
            truth = self.reference.truth(inputs, seed)
        errors = self.truth_errors(truth, ref_out, new_items, wide) if truth is not None else {}
        del truth
        for i, ref, new, comparison in failures:
            where = label + (f": output {i}" if len(new_items) > 1 else "")
            ref_error, new_error = errors.get(i, (None, None))
            if ref_error is not None and check.as_accurate(new_error, ref_error, self.cfg.truth_accuracy_factor):
                self.flag_once("accurate_vs_fp64")
                continue
            room = None
            if ref_error is None:  # no truth for these inputs
                passed, room = self.within_reference_error(i, ref, new, where, comparison)
                if passed:
                    continue
            raise wrong_values(where, comparison, reply, ref_error, new_error, room)

    def within_reference_error(self, i: int, ref, new, where: str, comparison: check.Comparison) -> tuple:
        """With no float64 truth for these inputs (it did not fit beside the workers, as in a timed round): is output
        `i` no further from the reference's than a candidate as accurate as the reference could be, by the reference's
        own error against float64 in the trials (check.within_reference_error)? (passed, words for a failure's reason:
        None where the trials measured no error to go by). A pass is flagged within_reference_error, and the notes say
        how far, once. Two honest runs of one TF32 convolution by two cuDNN algorithms (each process's choice, by the
        room it finds) lie further apart than 1e-4: an H200 capped to 79 GiB called level1 76_conv_standard_1D's A/A
        pair incorrect in timing round 4 for it (0.00057 apart; the reference 33 tolerances from float64)."""
        ref_error = self.ref_err_by_output.get(i)
        if ref_error is None:  # (truth_errors keeps float outputs only)
            return False, None
        tol = self.reference.tolerance(ref)
        ok, apart = check.within_reference_error(new, ref, ref_error, tol["atol"], tol["rtol"],
                                                 self.cfg.truth_accuracy_factor, self.cfg.compare_chunk_elems)
        measured = (f"{apart:.3g} tolerances from the reference's output, the reference itself {ref_error.worst:.3g} "
                    f"from float64 in the trials")
        if not ok:
            return False, f"no float64 truth fitted for these inputs; {measured}: beyond the room that leaves"
        self.flag_once("within_reference_error")
        if not any(note.startswith(WITHIN_REFERENCE_ERROR) for note in self.result.notes):
            self.judge.note(f"{WITHIN_REFERENCE_ERROR}{where}: outside the tolerance (max abs err "
                            f"{comparison.max_abs_err:.3g}), {measured}: within what that allows a candidate as "
                            f"accurate as it (no float64 truth fitted for these inputs)")
        return True, None

    def truth_errors(self, truth, ref_out, new_items: list, wide: bool = False) -> dict:
        """{output index: (reference's TruthError, candidate's)} for float outputs; the running maxima kept (the
        reference's per output from ordinary inputs only: within_reference_error goes by them)."""
        errors = {}
        for i, (t, ref, new) in enumerate(zip(check.items(truth), check.items(ref_out), new_items)):
            if not ref.is_floating_point():  # integer and bool outputs are exact: no error to measure
                continue
            tol, chunk = self.reference.tolerance(ref), self.cfg.compare_chunk_elems
            errors[i] = tuple(check.truth_error(x, t, tol["atol"], tol["rtol"], chunk) for x in (ref, new))
            self.ref_err = max(self.ref_err, errors[i][0].worst)
            if not wide:
                seen = self.ref_err_by_output.get(i, check.TruthError(0.0, 0))
                self.ref_err_by_output[i] = check.TruthError(max(seen.worst, errors[i][0].worst),
                                                             max(seen.outside, errors[i][0].outside))
            self.new_err = max(self.new_err, errors[i][1].worst)
        self.result.ref_err_vs_fp64, self.result.new_err_vs_fp64 = finite(self.ref_err), finite(self.new_err)
        return errors

    def first_trial_guards(self, shared: list, inputs: list, reply: dict, ref_out, seed: int) -> None:
        """Aliasing (outputs that change when inputs are overwritten) and run-to-run determinism."""
        if reply.get("aliases_input") or check.aliases_input(reply["items"], shared, inputs):
            self.result.flags.append(flag("output_aliases_input"))
        again = self.judge.run_candidate(shared, ref_out, seed, restore=True)
        if all(check.same_bits(a, b) for a, b in zip(reply["items"], again["items"])):
            return
        chunk = self.cfg.compare_chunk_elems
        spread = max(check.max_difference(a, b, chunk) for a, b in zip(reply["items"], again["items"]))
        if spread < float("inf") and (self.share_of_tolerance(ref_out, reply["items"], again["items"])
                                      < NONDETERMINISM_SHARE):
            return  # rounding-level differences (a NaN in one run only is never that)
        ref_again = self.reference.call_again(inputs, seed)  # only now: most candidates give the same bits twice
        ref_spread = max(check.max_difference(a, b, chunk)
                         for a, b in zip(check.items(ref_out), check.items(ref_again)))
        del ref_again
        if spread > NONDETERMINISM_RATIO * ref_spread:  # cuDNN's own run-to-run differences are no finding
            self.result.flags.append(flag("nondeterministic"))

    def flag_once(self, name: str) -> None:
        """The flag on the result, unless an earlier trial or timing round put it there."""
        if name not in self.result.flags:
            self.result.flags.append(flag(name))

    def share_of_tolerance(self, ref_out, first: list, second: list) -> float:
        """The largest difference between two runs' outputs as a share of the tolerance (1.0: at its edge); infinite
        for integer or bool outputs that differ."""
        worst = 0.0
        for ref, a, b in zip(check.items(ref_out), first, second):
            if not (a.is_floating_point() or a.is_complex()):
                if not torch.equal(a, b):
                    return float("inf")
                continue
            tol = self.reference.tolerance(ref)
            worst = max(worst, check.normalized_error(b, a, tol["atol"], tol["rtol"], self.cfg.compare_chunk_elems))
        return worst


def wrong_values(where: str, comparison: check.Comparison, reply: dict, ref_error, new_error, room=None) -> Verdict:
    """The verdict for an output outside tolerance, in one line: where, how many elements and the first, whether it
    returned an earlier call's storage, and both errors against float64 when the truth was there (else `room`: how far
    it lay against the reference's own error, where the trials measured one)."""
    reason = comparison.reason or ""
    if reply.get("reused_storage"):
        reason = f"it returned the storage of an earlier call's output (a cached result?): {reason}"
    if ref_error is not None:
        reason += (f"; against float64 its worst error is {new_error.worst:.3g} tolerances ({new_error.outside} "
                   f"elements beyond one), the reference's {ref_error.worst:.3g} ({ref_error.outside})")
    elif room:
        reason += f"; {room}"
    verdict = Verdict(Status.INCORRECT, f"{where}: {reason}")
    verdict.weights_may_explain = True  # a second attempt with the reference's weights may tell
    return verdict


def finite(value: float):
    """A float for the JSON record, None when it is not finite (a NaN or infinity where the truth is finite)."""
    return value if math.isfinite(value) else None
