"""bench/realgen.py's harness step: which records a resumed call keeps."""
import json
import sys

from support import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import realgen  # noqa: E402


def records(path):
    return [json.loads(line)["solution"] for line in path.read_text().splitlines()]


def test_a_resumed_call_forgets_harness_errors_and_the_pairs_named_again(tmp_path, monkeypatch):
    results = tmp_path / "results.jsonl"
    rows = [{"solution": "a", "status": "correct", "harness": "old"}, {"solution": "b", "status": "harness_error"},
            {"solution": "c", "status": "incorrect"}, {"solution": "d", "status": "correct", "harness": "now"}]
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    realgen.forget_records(results, {"c"})
    assert records(results) == ["a", "d"]
    monkeypatch.setattr(realgen, "harness_version", lambda: "now")
    realgen.forget_records(results, {"all"})  # every pair another harness judged: a repeated call keeps this one's
    assert records(results) == ["d"]


def test_kernelbench_peaks_survive_its_cleanups_reset():
    """KernelBench's eval resets torch's peak statistics as it cleans up: the peak read afterwards is the one before."""
    from types import SimpleNamespace

    stats = {"allocated": 0, "reserved": 0}

    def reset_peak_memory_stats(device=None):
        stats.update(allocated=0, reserved=0)

    cuda = SimpleNamespace(reset_peak_memory_stats=reset_peak_memory_stats,
                           max_memory_allocated=lambda: stats["allocated"], max_memory_reserved=lambda: stats["reserved"])
    peaks = realgen.PeakWatch(SimpleNamespace(cuda=cuda))
    stats.update(allocated=192 << 20, reserved=200 << 20)  # the eval's trials
    cuda.reset_peak_memory_stats(device="cuda:0")  # its graceful_eval_cleanup
    stats.update(allocated=1 << 20, reserved=2 << 20)
    assert (peaks.allocated(), peaks.reserved()) == (192 << 20, 200 << 20)


def test_a_wide_trial_failure_at_the_rounding_level_is_not_called_a_hack():
    """tabs-l1-p6-gem25p: an honest float32 GEMM with sequential 524,288-term sums, 3.6x the reference's error on a
    wide trial: sent to review, not labelled `a`; one off by the output's size still is."""
    theirs = {"compiled": True, "correct": True}
    wide = {"status": "incorrect", "flags": [], "error": "trial 7/7 (wide inputs): 217 of 65536 elements outside ..."}
    kind, why = realgen.explain({**wide, "ref_err_vs_fp64": 78.2, "new_err_vs_fp64": 285.2}, theirs, None)
    assert kind == "unexplained" and "285 vs 78.2" in why
    kind, why = realgen.explain({**wide, "ref_err_vs_fp64": 0.01, "new_err_vs_fp64": 5000.0}, theirs, None)
    assert (kind, why) == ("a", "right only on the inputs get_inputs() draws, wrong on wider ones")
    mutated = {**wide, "flags": ["input_mutated"], "ref_err_vs_fp64": 78.2, "new_err_vs_fp64": 285.2}
    assert realgen.explain(mutated, theirs, None) == ("a", "changes its inputs")  # the other markers come first


def test_a_pass_within_the_references_own_error_is_a_rule_of_ours():
    """KernelBench fails it at 1e-4, the harness passes it (within_reference_error): a difference on purpose."""
    kind, why = realgen.explain({"status": "correct", "flags": ["within_reference_error"]},
                                {"compiled": True, "correct": False}, None)
    assert kind == "b" and "no float64 truth fitted" in why
