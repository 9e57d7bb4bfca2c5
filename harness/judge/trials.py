"""The correctness phase of a pair: secret-seeded trials, outputs against the reference's and the float64 truth, the
guards, the problem's own checks, a second attempt with the reference's weights. It never imports judge.py."""
from __future__ import annotations

import math

import torch

from harness.common import check, semantics
from harness.judge import lint
from harness.judge.reports import CorrectnessReport
from harness.common.records import one_line
from harness.common.verdict import Status, Verdict, flag

NONDETERMINISM_RATIO = 4.0  # spread over this many times the reference's: nondeterministic ...
# ... and this share of the tolerance: docs/decisions/correctness-rounding.md
NONDETERMINISM_SHARE = 0.01
TRIAL_FLAGS = ("output_aliases_input", "nondeterministic", "reduced_precision", "accurate_vs_fp64",
               "within_reference_error")
WITHIN_REFERENCE_ERROR = "within the reference's own error: "
RANDOM_REFERENCE = ("the reference draws random numbers (Dropout in training mode, say): each correctness call of "
                    "both sides was seeded alike, no float64 truth was used, and timed outputs were not checked")


class Trials:
    """The correctness phase of one pair, run by its PairJudge; its findings in `report`."""

    def __init__(self, ctx):
        self.ctx, self.cfg, self.phase = ctx, ctx.cfg, ctx.phase
        self.rules = ctx.cfg.correctness  # the trials' settings
        self.reference, self.workers, self.note = ctx.reference, ctx.workers, ctx.note
        self.report = CorrectnessReport()
        self.within_noted = False  # the within_reference_error note written (once a pair)
        self.problem_checked = False  # the problem's checks done (trials 1-2)
        self.problem_check = None
        self.ref_err = self.new_err = 0.0  # maxima vs float64, in tolerances
        self.ref_err_by_output = {}  # ordinary trials' maxima

    def run(self) -> None:
        """Every trial; on a wrong value, again with the reference's weights (weights_copied)."""
        try:
            self.all_trials()
        except Verdict as first:
            if not first.weights_may_explain:
                raise
            self.workers.restart_state()
            if not self.workers.adopt_reference_weights():
                raise
            kept, self.report = self.report, self.afresh(self.report)
            try:
                self.all_trials()
            except Verdict as second:
                self.report = kept  # the first attempt's verdict and figures
                self.note(f"tried again with the reference's weights copied over its own: "
                          f"{one_line(second.error, 200)}")
                raise first from None
            self.report.flags.append(flag("weights_copied"))

    def all_trials(self) -> None:
        total = self.rules.total_trials
        for trial in range(total):
            self.trial_retried_when_full(trial, total)
        self.report.trials = total
        if self.new_err > 0.01 and self.new_err > self.rules.reduced_precision_ratio * self.ref_err:
            self.report.flags.append(flag("reduced_precision"))

    def afresh(self, first: CorrectnessReport) -> CorrectnessReport:
        """A second attempt's report: the problem's findings kept, the first attempt's trial findings forgotten."""
        self.ref_err = self.new_err = 0.0
        self.ref_err_by_output = {}
        return CorrectnessReport(flags=[f for f in first.flags if f not in TRIAL_FLAGS],
                                 problem_findings=list(first.problem_findings))

    def trial_retried_when_full(self, trial: int, total: int) -> None:
        """One trial; again after every cache is handed back if the judge ran out of GPU memory."""
        flags = list(self.report.flags)  # found again when the trial runs again
        try:
            return self.one_trial(trial, total)
        except torch.cuda.OutOfMemoryError as exc:
            self.note(f"trial {trial + 1}: the judge ran out of GPU memory ({one_line(str(exc), 120)}); tried once "
                      f"more after every cache was handed back")
        # out of the except block: its traceback held the trial's tensors
        self.report.flags = flags
        self.workers.expect_ok(self.workers.sandbox.request("release_outputs", self.cfg.limits.timeout))
        self.workers.release_all_caches()
        self.one_trial(trial, total)

    def one_trial(self, trial: int, total: int) -> None:
        """Fresh inputs, both sides' outputs, every check."""
        wide = trial >= self.rules.trials
        label = f"trial {trial + 1}/{total}" + (" (wide inputs)" if wide else "")
        seed = self.reference.call_seed(trial)
        with self.phase("correctness.reference"):
            inputs, ref_out, truth = self.reference_trial(trial, wide, seed)
        if trial == 0:
            self.reference.measure_sizes(inputs, ref_out)
        if not self.problem_checked:
            self.check_problem(trial, total, check.items(ref_out))
        if trial == 0:  # see PairWorkers.reference_worker_first_call
            with self.phase("correctness.reference_worker"):
                self.workers.reference_worker_first_call(inputs, ref_out, seed)
        try:
            with self.phase("correctness.candidate"):
                shared = self.workers.sandbox.outbox.copies(inputs)
                reply = self.workers.run_candidate(shared, ref_out, seed)
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
                # Flagged on any trial, so a timed output that is its input is no cheat (compare_timed_output).
                self.flag_once("output_aliases_input")
        del inputs, shared, reply, ref_out
        with self.phase("correctness.release"):
            self.workers.release_trial()

    def reference_trial(self, trial: int, wide: bool, seed: int) -> tuple:
        """reference_on; ordinary inputs (noted) if the reference rejects wide ones."""
        try:
            return self.reference_on(trial, wide, seed)
        except Verdict as verdict:
            if not wide or verdict.status != Status.HARNESS_ERROR:  # its forward raised
                raise
            self.note(f"the reference rejected the wide inputs ({one_line(verdict.error, 160)}): those trials ran "
                      f"on get_inputs() as it is")
        return self.reference_on(trial, False, seed)

    def reference_on(self, trial: int, wide: bool, seed: int) -> tuple:
        """(inputs, reference output, truth or None if the inputs drew otherwise)."""
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
            self.note("no float64 truth: get_inputs() gave other inputs under the same seed")
            return inputs, ref_out, None
        return inputs, ref_out, truth

    def check_problem(self, trial: int, total: int, outputs: list) -> None:
        """The lint's checks on the reference's outputs: degenerate_problem."""
        if trial == 0:  # afresh: a second attempt starts again here
            self.problem_check = lint.ProblemCheck(self.cfg, self.ctx.job.problem)
            if self.reference.random_reference:
                self.note(RANDOM_REFERENCE)
        self.problem_check.see(outputs)
        self.problem_checked = trial == 1 or total == 1
        if self.problem_check.findings:
            self.report.problem_findings = list(self.problem_check.findings)
            self.flag_once("degenerate_problem")

    def check_outputs(self, inputs: list, ref_out, reply: dict, label: str, seed, truth=None, wide=False) -> None:
        """Raise incorrect unless each output passes (tolerance, float64 truth, or the reference's error)."""
        new_items, failures = reply["items"], []
        for i, (ref, new) in enumerate(zip(check.items(ref_out), new_items)):
            tol = self.reference.tolerance(ref)
            comparison = check.compare(ref, new, tol["atol"], tol["rtol"], self.rules.compare_chunk_elems)
            self.report.max_abs_err = max(self.report.max_abs_err or 0.0, comparison.max_abs_err)
            self.report.max_rel_err = max(self.report.max_rel_err or 0.0, comparison.max_rel_err)
            if not comparison.ok:
                failures.append((i, ref, new, comparison))
        if truth is None and failures:
            truth = self.reference.truth(inputs, seed)
        errors = self.truth_errors(truth, ref_out, new_items, wide) if truth is not None else {}
        del truth
        for i, ref, new, comparison in failures:
            where = label + (f": output {i}" if len(new_items) > 1 else "")
            ref_error, new_error = errors.get(i, (None, None))
            if ref_error is not None and check.as_accurate(new_error, ref_error, self.rules.truth_accuracy_factor):
                self.flag_once("accurate_vs_fp64")
                continue
            room = None
            if ref_error is None:  # no truth for these inputs
                passed, room = self.within_reference_error(i, ref, new, where, comparison)
                if passed:
                    continue
            raise wrong_values(where, comparison, reply, ref_error, new_error, room)

    def within_reference_error(self, i: int, ref, new, where: str, comparison: check.Comparison) -> tuple:
        """With no float64 truth: is output `i` within the reference's own error? (passed, reason): docs/judging.md"""
        ref_error = self.ref_err_by_output.get(i)
        if ref_error is None:  # float outputs only
            return False, None
        tol = self.reference.tolerance(ref)
        ok, apart = check.within_reference_error(new, ref, ref_error, tol["atol"], tol["rtol"],
                                                 self.rules.truth_accuracy_factor, self.rules.compare_chunk_elems)
        measured = (f"{apart:.3g} tolerances from the reference's output, the reference itself {ref_error.worst:.3g} "
                    f"from float64 in the trials")
        if not ok:
            return False, f"no float64 truth fitted for these inputs; {measured}: beyond the room that leaves"
        self.flag_once("within_reference_error")
        if not self.within_noted:
            self.within_noted = True
            self.note(f"{WITHIN_REFERENCE_ERROR}{where}: outside the tolerance (max abs err "
                      f"{comparison.max_abs_err:.3g}), {measured}: within what that allows a candidate as "
                      f"accurate as it (no float64 truth fitted for these inputs)")
        return True, None

    def truth_errors(self, truth, ref_out, new_items: list, wide: bool = False) -> dict:
        """{output index: (reference's TruthError, candidate's)}; maxima kept."""
        errors = {}
        for i, (t, ref, new) in enumerate(zip(check.items(truth), check.items(ref_out), new_items)):
            if not ref.is_floating_point():  # exact
                continue
            tol, chunk = self.reference.tolerance(ref), self.rules.compare_chunk_elems
            errors[i] = tuple(check.truth_error(x, t, tol["atol"], tol["rtol"], chunk) for x in (ref, new))
            self.ref_err = max(self.ref_err, errors[i][0].worst)
            if not wide:
                seen = self.ref_err_by_output.get(i, check.TruthError(0.0, 0))
                self.ref_err_by_output[i] = check.TruthError(max(seen.worst, errors[i][0].worst),
                                                             max(seen.outside, errors[i][0].outside))
            self.new_err = max(self.new_err, errors[i][1].worst)
        self.report.ref_err_vs_fp64, self.report.new_err_vs_fp64 = finite(self.ref_err), finite(self.new_err)
        return errors

    def first_trial_guards(self, shared: list, inputs: list, reply: dict, ref_out, seed: int) -> None:
        """Aliasing and run-to-run determinism."""
        if reply.get("aliases_input") or check.aliases_input(reply["items"], shared, inputs):
            self.report.flags.append(flag("output_aliases_input"))
        again = self.workers.run_candidate(shared, ref_out, seed, restore=True)
        if all(check.same_bits(a, b) for a, b in zip(reply["items"], again["items"])):
            return
        chunk = self.rules.compare_chunk_elems
        spread = max(check.max_difference(a, b, chunk) for a, b in zip(reply["items"], again["items"]))
        if spread < float("inf") and (self.share_of_tolerance(ref_out, reply["items"], again["items"])
                                      < NONDETERMINISM_SHARE):
            return  # rounding (a NaN in one run never is)
        ref_again = self.reference.call_again(inputs, seed)  # only now: it is rarely needed
        ref_spread = max(check.max_difference(a, b, chunk)
                         for a, b in zip(check.items(ref_out), check.items(ref_again)))
        del ref_again
        if spread > NONDETERMINISM_RATIO * ref_spread:
            self.report.flags.append(flag("nondeterministic"))

    def flag_once(self, name: str) -> None:
        """Add the flag unless it is there."""
        if name not in self.report.flags:
            self.report.flags.append(flag(name))

    def share_of_tolerance(self, ref_out, first: list, second: list) -> float:
        """Two runs' largest difference as a share of the tolerance."""
        worst = 0.0
        for ref, a, b in zip(check.items(ref_out), first, second):
            if not (a.is_floating_point() or a.is_complex()):
                if not torch.equal(a, b):
                    return float("inf")
                continue
            tol = self.reference.tolerance(ref)
            worst = max(worst, check.normalized_error(b, a, tol["atol"], tol["rtol"], self.rules.compare_chunk_elems))
        return worst


def wrong_values(where: str, comparison: check.Comparison, reply: dict, ref_error, new_error, room=None) -> Verdict:
    """The one-line incorrect verdict for an output outside tolerance."""
    reason = comparison.reason or ""
    if reply.get("reused_storage"):
        reason = f"it returned the storage of an earlier call's output (a cached result?): {reason}"
    if ref_error is not None:
        reason += (f"; against float64 its worst error is {new_error.worst:.3g} tolerances ({new_error.outside} "
                   f"elements beyond one), the reference's {ref_error.worst:.3g} ({ref_error.outside})")
    elif room:
        reason += f"; {room}"
    verdict = Verdict(Status.INCORRECT, f"{where}: {reason}")
    verdict.weights_may_explain = True  # Trials.run tries again
    return verdict


def finite(value: float):
    """`value` for the JSON record, None when not finite."""
    return value if math.isfinite(value) else None
