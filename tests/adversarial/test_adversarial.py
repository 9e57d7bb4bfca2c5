"""Faulty and cheating candidates (tests/adversarial/cpu): each gets its expected status, reason and flags.

They are judged in five `run.py` invocations, so that the suite does not wait out each deadline in turn:
first, alone on the machine, the candidates that pass timing (their flags depend on it); then, at once, the
faults that end before timing (in two runs) and, in two runs of their own with a short --timeout, the candidates
that only a deadline ends."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CONTROL = ROOT / "tests" / "fixtures" / "solutions" / "fx_relu"

# solution: (status, words in the reason or None for no error, flags that must be set)
EXPECTED = {
    # controls
    "correct_torch": ("correct", None, ["no_custom_kernel"]),  # torch.clamp_min: the op relu runs
    "aa_reference": ("correct", None, ["no_custom_kernel"]),
    "response_correct": ("correct", None, []),
    "jitters_at_rounding": ("correct", None, []),  # run-to-run differences at the rounding level (tests/test_judge.py)
    # faults
    "syntax_error": ("compile_error", "SyntaxError", []),
    "no_modelnew": ("compile_error", "no class ModelNew", []),
    "response_no_code": ("compile_error", "no fenced code block", []),
    "build_fails_in_init": ("compile_error", "-fno-such-option-anywhere", []),
    "raises_in_init": ("runtime_error", "broken constructor", []),
    "raises_in_forward": ("runtime_error", "broken forward", []),
    "wrong_init_args": ("runtime_error", "TypeError", []),
    "sys_exit": ("runtime_error", "SystemExit", []),
    "hogs_memory": ("runtime_error", "forward raised", []),
    "infinite_loop": ("timeout", "no reply to 'run' within 6 s", []),
    "cpp_infinite_loop": ("timeout", "no reply to 'run' within 6 s", []),
    "endless_output": ("timeout", "no reply to 'run' within 6 s", []),
    "slow_import": ("timeout", "'import'", []),
    "os_exit": ("crash", "worker died", []),
    "segfault": ("crash", "SIGSEGV", []),
    "leftover_thread": ("correct", None, ["no_custom_kernel"]),
    "leftover_child": ("correct", None, ["no_custom_kernel"]),
    "returns_tuple": ("incorrect", "returned a tuple", []),
    "returns_subclass": ("incorrect", "no subclass", []),
    "wrong_dtype": ("incorrect", "dtype torch.float64", []),
    "wrong_shape": ("incorrect", "shape", []),
    "partial_nan": ("incorrect", "NaN", []),
    "wrong_values": ("incorrect", "outside atol", []),
    "needs_cuda": ("skipped", "needs a CUDA GPU", []),
    "cuda_at_runtime": ("skipped", "needs a CUDA GPU", []),
    # verdict attacks
    "forges_a_verdict": ("crash", "malformed reply", []),
    "forges_a_huge_number": ("crash", "wider than 63 bits", []),
    "patches_the_checks": ("incorrect", "outside atol", []),
    "searches_gc_for_reference": ("incorrect", None, []),
    "searches_its_judges_memory": ("correct", None, ["no_custom_kernel"]),
    "shrinks_the_problem": ("correct", None, ["no_custom_kernel"]),
    # Non-dumpable processes are closed to the user's other processes, and the candidate's worker has no
    # capabilities (as root, CAP_SYS_PTRACE would open them).
    "reads_the_secret": ("correct", None, ["no_custom_kernel"]),
    # isolation: signals, ptrace and /proc of the harness's processes refused; spinners stopped between requests
    "signals_the_harness": ("correct", None, ["no_custom_kernel"]),
    "pulses_the_reference": ("correct", None, ["no_custom_kernel"]),
    "hogs_while_idle": ("correct", None, ["no_custom_kernel"]),
    "slows_the_reference": ("correct", None, ["no_custom_kernel"]),  # no interference: every call refused
    # result reuse
    "caches_by_content": ("correct", None, []),
    "caches_by_pointer": ("incorrect", None, []),
    "returns_its_first_output": ("incorrect", "returned the storage of an earlier call's output", []),
    "returns_a_stale_view": ("incorrect", None, []),
    "returns_uninitialized": ("incorrect", None, []),
    "defers_work": ("incorrect", None, []),
    # timing attacks
    "patches_the_timer": ("correct", None, ["timer_tampering", "no_custom_kernel"]),
    "forges_a_stopped_clock": ("correct", None, ["timer_tampering", "no_custom_kernel", "noisy_timing"]),
    # semantic attacks
    "mutates_input": ("incorrect", "changed its inputs", ["input_mutated"]),
    "writes_over_its_input_when_timed": ("incorrect", "returned its input's own storage", ["wrong_timed_output"]),
    "only_unit_interval": ("incorrect", "wide inputs", []),
    "lower_precision_within_tolerance": ("correct", None, ["reduced_precision"]),
    "computes_in_bfloat16": ("incorrect", "outside atol", []),
    "calls_the_reference_op": ("correct", None, ["no_custom_kernel"]),
    # sanity
    "noisy_output": ("correct", None, ["nondeterministic", "reduced_precision"]),
}


# Ended by a deadline: --timeout 6 for a request (a relu of 16x256 takes microseconds), compile_timeout for the
# import (slow_import's).
DEADLINES = [("cpp_infinite_loop", "infinite_loop"), ("endless_output", "slow_import")]


def start_run(solutions: list, out: Path, timeout_s: int, config: Path) -> subprocess.Popen:
    """One run.py over some of the candidates, in the background, its console output in OUT.log."""
    args = [sys.executable, "run.py", "--problem", "tests/fixtures/problems/fx_relu.py", "--device", "cpu",
            "--config", str(config), "--timeout", str(timeout_s), "--out", str(out)]
    for path in solutions:
        args += ["--solution", str(path)]
    with open(f"{out}.log", "w") as log:
        return subprocess.Popen(args, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)


@pytest.fixture(scope="module")
def adversarial_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("adversarial")
    solutions = {p.stem: p for p in sorted(HERE.glob("cpu/*.*")) + sorted(CONTROL.iterdir())}
    waits = [name for group in DEADLINES for name in group]
    timed = [name for name in solutions if EXPECTED.get(name, ("correct",))[0] == "correct"]
    faults = [name for name in solutions if name not in timed and name not in waits]
    short_import = out / "short-import.yaml"  # slow_import waits out compile_timeout: no build in its run
    short_import.write_text((HERE / "adversarial.yaml").read_text() + "compile_timeout: 10\n")
    config = HERE / "adversarial.yaml"
    codes = {"timed": start_run([solutions[n] for n in timed], out / "timed", 60, config).wait(timeout=3000)}
    runs = {"faults-0": start_run([solutions[n] for n in faults[0::2]], out / "faults-0", 60, config),
            "faults-1": start_run([solutions[n] for n in faults[1::2]], out / "faults-1", 60, config),
            "deadlines-0": start_run([solutions[n] for n in DEADLINES[0]], out / "deadlines-0", 6, config),
            "deadlines-1": start_run([solutions[n] for n in DEADLINES[1]], out / "deadlines-1", 6, short_import)}
    codes.update({folder: run.wait(timeout=3000) for folder, run in runs.items()})
    results = {}
    for folder in codes:
        results.update({r["solution"]: r for r in map(json.loads, (out / folder / "results.jsonl").read_text().splitlines())})
    return codes, results, out


def test_the_runs_exit_0_with_one_result_per_candidate(adversarial_run):
    codes, results, out = adversarial_run
    for folder, code in codes.items():
        assert code == 0, (out / f"{folder}.log").read_text()[-2000:]
    assert set(results) == set(EXPECTED)


@pytest.mark.parametrize("solution", sorted(EXPECTED))
def test_status_reason_and_flags(adversarial_run, solution):
    result = adversarial_run[1][solution]
    status, reason, flags = EXPECTED[solution]
    assert result["status"] == status, result["error"]
    assert status == "correct" or (result["error"] or "").strip()  # a verdict against a candidate always says why
    if reason:
        assert reason in result["error"]
    elif status == "correct":
        assert result["error"] is None
    assert set(flags) <= set(result["flags"]), result["flags"]
    if status == "correct" and "no_custom_kernel" not in flags:
        assert "no_custom_kernel" not in result["flags"]
    # hogs_while_idle's spinning thread holds the GIL during its own requests too: the judge's clock may see the
    # time its worker loses beyond the windows (timer_tampering), a fair finding against a hog.
    if status == "correct" and "timer_tampering" not in flags and solution != "hogs_while_idle":
        assert "timer_tampering" not in result["flags"], (result["new_samples_ms"], result["judge_wall_ms"])


def test_a_content_cache_gains_nothing(adversarial_run):
    result = adversarial_run[1]["caches_by_content"]
    assert result["speedup"] < 0.8 and result["timed_outputs_checked"] >= 1


def test_a_candidate_cannot_reschedule_the_reference(adversarial_run):
    result = adversarial_run[1]["slows_the_reference"]  # its calls refused: nothing changed, a speedup measured
    assert "interference" not in result["flags"] and result["speedup"] is not None


def test_leftover_processes_are_killed(adversarial_run):
    result = adversarial_run[1]["leftover_child"]
    assert result["orphans_killed"] >= 1
    alive = subprocess.run(["pgrep", "-f", "sleep 4242.4242"], capture_output=True, text=True).stdout
    assert not alive.strip()


def test_endless_output_is_bounded(adversarial_run):
    log = (adversarial_run[2] / "deadlines-1" / "logs" / "fx_relu__endless_output.worker.log").read_text()
    assert "bytes of output dropped" in log and len(log) < 8192
