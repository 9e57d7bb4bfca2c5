"""The correctness phase (harness/judge_trials.py), on whole pairs judged once on the CPU (conftest's judged_pairs):
integer outputs compared exactly, run-to-run spread judged against the reference's own."""


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
