"""The judge process (harness/judge/judge.py): whole pairs on the CPU, its failures, the gated protocol."""
import json
import subprocess
import sys

from support import FAST_CONFIG, FIXTURES, ROOT, pair_job


def run_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "run.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_flops_are_counted_once_per_problem_in_a_run(judged_pairs):
    first, later = judged_pairs[("fx_jitter", "aa_reference")], judged_pairs[("fx_jitter", "jitters_more")]  # judged in this order
    assert first["flops"] is not None and later["flops"] == first["flops"]
    assert first["tf32_flops"] is not None and later["tf32_flops"] == first["tf32_flops"]  # the floor's TF32 share too
    assert "timing_setup.flops" in first["phases_s"] and "timing_setup.flops" not in later["phases_s"]


def test_a_failure_of_the_judge_is_a_harness_error_not_the_candidates(tmp_path):
    """The judge cannot write its peaks cache (a file stands where the folder should be): its own exception,
    in stage 'timing'. The pair is harness_error with the traceback in its judge log; --gate exits 3; JUnit
    calls it an <error>."""
    (tmp_path / "not_a_folder").write_text("")
    config = tmp_path / "config.yaml"
    config.write_text(FAST_CONFIG.read_text() + f"peaks_cache_dir: {tmp_path / 'not_a_folder' / 'peaks'}\n")
    proc = run_cli("--problem", str(FIXTURES / "problems" / "fx_relu.py"), "--solution",
                   str(FIXTURES / "solutions" / "fx_relu" / "correct_torch.py"), "--device", "cpu", "--config",
                   str(config), "--out", str(tmp_path / "run"), "--gate", "--junit", str(tmp_path / "junit.xml"))
    (record,) = map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())
    assert record["status"] == "harness_error", record
    assert "stage 'timing'" in record["error"] and "NotADirectoryError" in record["error"]
    assert "Traceback" in (tmp_path / "run" / "logs" / "fx_relu__correct_torch.judge.log").read_text()
    assert proc.returncode == 3, proc.stderr
    assert "HARNESS ERROR" in proc.stderr and "<error" in (tmp_path / "junit.xml").read_text()


def test_a_pair_with_judges_ahead_waits_for_the_runners_go_before_its_timing(tmp_path):
    """The gated protocol end to end, on the CPU: the judge stops at its timing stage until the runner says go."""
    from harness.common import discover
    from harness.runner import environment, judges, runner
    from harness.common.config import build_config

    config = build_config(str(FAST_CONFIG), {"device": "cpu"})
    ctx = runner.new_context(config, "cpu", {}, tmp_path, environment.probe_environment("cpu"))
    starter = judges.JudgeStarter(ctx, ("cpu",), ahead=1)
    solution = FIXTURES / "solutions" / "fx_jitter" / "aa_reference.py"
    pair = discover.Pair("fx_jitter", FIXTURES / "problems" / "fx_jitter.py", "aa_reference", solution)
    try:
        result = runner.hand_to_judge(pair, discover.read_source(solution), ctx, starter)
    finally:
        starter.close()
    assert result.status == "correct" and result.speedup is not None, result.error
    assert "timing_setup.turn" in result.phases_s and starter.holding == set()


def test_a_warm_up_that_fails_in_the_judge_still_reads_each_workers_word(monkeypatch):
    """Unread, a worker's warm-up word would be taken for the reply to the pair's first request."""
    from harness.judge import judge

    class Worker:
        def __init__(self):
            self.calls = []

        def start_warm_up(self, device):
            self.calls.append("start")

        def finish_warm_up(self):
            self.calls.append("finish")

    def no_memory(*args, **kwargs):
        raise RuntimeError("CUDA error: out of memory")

    monkeypatch.setattr(judge.torch, "ones", no_memory)  # the judge's own CUDA start fails
    workers = (Worker(), Worker())
    judge.warm_up_with_workers("cuda:0", workers)
    assert [w.calls for w in workers] == [["start", "finish"], ["start", "finish"]]


def test_a_pair_too_large_for_the_hosts_memory_is_skipped_up_front(tmp_path):
    """On the CPU, 4 TiB of input (sized on the meta device, never allocated): skipped with the figures and the
    problem's size constants, before any worker runs, instead of a judge ended by the out-of-memory killer."""
    proc = run_cli("--problem", str(FIXTURES / "problems" / "fx_relu.py"), "--solution",
                   str(FIXTURES / "solutions" / "fx_relu" / "correct_torch.py"), "--device", "cpu", "--config",
                   str(FAST_CONFIG), "--out", str(tmp_path / "run"), "--set", "batch_size=1048576",
                   "--set", "dim=1048576")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (record,) = map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())
    assert record["status"] == "skipped", record
    assert "needs over 24576.0 GiB of memory (inputs 4096.0 GiB, output 4096.0 GiB" in record["error"], record["error"]
    assert "(its sizes: batch_size=1048576, dim=1048576)" in record["error"]
    assert not {"build", "workers"} & set(record["phases_s"] or {})  # ended before the workers were given anything


def test_a_problem_is_sized_on_the_meta_device_in_the_runs_precision():
    from pathlib import Path

    import torch

    from harness.common.inputs import nbytes
    from harness.common.load import load_module
    from harness.common.problem_info import call_on_meta

    path = FIXTURES / "problems" / "fx_relu.py"
    module = load_module(Path(path).read_text(), path, "sized_module", {"batch_size": 1 << 20})
    inputs, out = call_on_meta(module)
    assert out.device.type == "meta" and nbytes(inputs) == nbytes(out) == (1 << 20) * 256 * 4
    inputs, out = call_on_meta(module, dtype=torch.float16)
    assert nbytes(inputs) == nbytes(out) == (1 << 20) * 256 * 2


def test_a_workers_count_and_peak_are_taken_only_when_plausible():
    from harness.judge import judge

    assert judge.reported_count({"ooms": 2}, "ooms") == 2
    for forged in ({"ooms": -1}, {"ooms": True}, {"ooms": 1.5}, {"ooms": "3"}, {}, None, [1]):
        assert judge.reported_count(forged, "ooms") is None
    assert judge.reported_peak({"peak_mem_mb": 12.34}) == 12.3
    for forged in ({"peak_mem_mb": "inf"}, {"peak_mem_mb": float("nan")}, {"peak_mem_mb": 10**400}, {}):
        assert judge.reported_peak(forged) is None


def test_a_stateful_problem_is_judged_in_lockstep(tmp_path):
    """KernelBench v0's VanillaRNN advances self.hidden on each call: the reference against itself and an honest rewrite
    of the recurrence are correct (they were incorrect, 'timing round 4', before lockstep), one that never advances
    its state is not, and the result says the problem is stateful. No flag of a pass rides on a failed verdict."""
    from support import judge_run

    folder = FIXTURES / "solutions" / "fx_stateful_rnn"
    aa = tmp_path / "aa.py"
    aa.write_text("class ModelNew(Model):\n    pass\n")
    results, _ = judge_run(str(FIXTURES / "problems" / "fx_stateful_rnn.py"),
                           [aa, folder / "honest.py", folder / "state_ignored.py"], tmp_path / "run", FAST_CONFIG, 30)
    for name in ("aa", "honest"):
        assert results[name]["status"] == "correct", results[name]["error"]
        assert results[name]["stateful"] is True and results[name]["timed_outputs_checked"] >= 1
    ignored = results["state_ignored"]
    assert ignored["status"] == "incorrect" and "trial 2" in ignored["error"], ignored["error"]
    assert not {"accurate_vs_fp64", "within_reference_error", "weights_copied"} & set(ignored["flags"])


def test_a_failed_verdict_drops_the_flags_that_say_how_a_trial_passed():
    """A timed round that fails after trials that passed by accurate_vs_fp64 is incorrect, and only that: its flags
    agree with its reason (v0's VanillaRNN against itself was `incorrect` with accurate_vs_fp64 before lockstep)."""
    from types import SimpleNamespace

    from harness.judge.judge import PairJudge
    from harness.common.records import Result
    from harness.common.verdict import Status, Verdict

    judged = SimpleNamespace(result=Result(problem="p", solution="s", status=Status.CORRECT,
                                           flags=["accurate_vs_fp64", "no_custom_kernel", "weights_copied"]))
    PairJudge.end_with(judged, Verdict(Status.INCORRECT, "timing round 4: wrong values", "wrong_timed_output"))
    assert judged.result.flags == ["no_custom_kernel", "wrong_timed_output"]
    passed = SimpleNamespace(result=Result(problem="p", solution="s", status=Status.CORRECT, flags=["accurate_vs_fp64"]))
    PairJudge.end_with(passed, Verdict(Status.CORRECT, None))
    assert passed.result.flags == ["accurate_vs_fp64"]


def test_each_block_and_pair_times_by_draws_of_its_own():
    """A confirmation block's round order and pads come from its own seed: with the run's secret alone, every block
    (and every pair) drew the same, and fresh workers re-placed behind the same pads agreed on one process's offset."""
    from harness.common.config import build_config
    from harness.judge.judge import PairJudge

    def seed(block: int, solution: str = "a") -> int:
        job = pair_job(solution=solution, config=build_config(str(FAST_CONFIG), {"device": "cpu"}), block=block)
        return PairJudge(job, (None, None), frozenset()).reference.timing_seed()

    assert seed(1) == seed(1)  # one run, one pair, one block: the same draws, as the judge's checks need
    assert len({seed(1), seed(2), seed(3), seed(1, "b")}) == 4
