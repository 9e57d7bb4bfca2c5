"""The harness's GPU memory budget (harness/footprint.py), reckoned on the meta device, and the pre-flight check."""
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from harness import footprint, problem_info
from harness.load import load_module
from harness.verdict import Status, Verdict

ROOT = Path(__file__).resolve().parents[1]


def sigmoid_sizes(**overrides) -> problem_info.Sizes:
    path = ROOT / "problems" / "sigmoid.py"
    return problem_info.sizes(load_module(path.read_text(), str(path), "problem_module", overrides))


def test_full_size_sigmoid_fits_the_budget_stated_in_the_issue():
    """6 GiB in, 6 GiB out: the judge at most 2.5x (inputs + output) at its peak, the whole harness at most 3.5x."""
    size = sigmoid_sizes()
    assert size == problem_info.Sizes(6 << 30, 6 << 30, 0, (torch.float32,))
    total = size.inputs + size.outputs
    assert footprint.judge(size) == 2 * total  # inputs, reference output, truth, the candidate's copy
    assert footprint.harness(size) == 3 * total + footprint.SLACK  # at timing: judge 1.5x, workers 1.5x
    assert footprint.judge(size) <= 2.5 * total and footprint.harness(size) <= 3.5 * total
    # Room for a candidate with three full-size temporaries beside its output (four outputs of its own):
    assert footprint.candidate_allowance(size) >= 4 * size.outputs


def test_the_budget_counts_weights_and_the_larger_of_inputs_and_output():
    matmul = problem_info.Sizes(inputs=2 << 30, outputs=1 << 30, weights=3 << 30, output_dtypes=(torch.float32,))
    stages = footprint.stages(matmul)
    assert stages["correctness"]["judge"] == (4 + 2 + 9) << 30  # 2I + 2O, the model and its float64 copy
    assert stages["timing"]["judge"] == (6 + 9) << 30  # three copies of the inputs for a moment
    assert stages["timing"]["reference worker"] == (2 + 1 + 3) << 30
    assert footprint.harness(matmul) == max((15 + 3) << 30, (15 + 6 + 2) << 30) + footprint.SLACK


def test_a_gpu_pair_that_cannot_fit_is_skipped_with_the_figures_and_the_sizes_to_shrink(monkeypatch):
    """The pre-flight check on a GPU: footprint.pair_need against the free memory; the verdict names both and the
    --set."""
    from harness import judge_memory

    path = ROOT / "problems" / "sigmoid.py"
    memory = judge_memory.PairMemory(torch.device("cuda", 0), path.read_text(), {}, sigmoid_sizes())
    monkeypatch.setattr(judge_memory, "free_memory", lambda device: 40 << 30)  # a 40 GiB card, say
    with pytest.raises(Verdict) as raised:
        memory.check()
    verdict = raised.value
    assert verdict.status == Status.SKIPPED
    assert "needs over 44.0 GiB" in verdict.error and "40.0 GiB available" in verdict.error, verdict.error
    assert "batch_size=4096, dim=393216" in verdict.error and "footprint" in verdict.error
    monkeypatch.setattr(judge_memory, "free_memory", lambda device: 74 << 30)
    memory.check()  # an H100's 80 GiB, less the CUDA contexts: it runs
    memory.sizes = problem_info.Sizes(8 << 30, 8 << 30, 0, (torch.float32,))  # KernelBench's L1Norm: 8 GiB a tensor
    memory.check()  # runs on the H100 too (it did before the budget: no pair is lost)
    pooling = problem_info.Sizes(16 << 30, 1 << 27, 0, (torch.float32,))  # 45_Average_Pooling_2D: 16 GiB in
    assert footprint.harness(pooling) > 74 << 30 >= footprint.pair_need(pooling)[0]  # caches give way: it fits
    memory.sizes = pooling
    memory.check()
    memory.sizes = sigmoid_sizes()
    memory.sizes = sigmoid_sizes(batch_size=256)
    monkeypatch.setattr(judge_memory, "free_memory", lambda device: 8 << 30)
    memory.check()  # shrunk with --set: fits an 8 GiB card


def test_a_gpu_pair_says_what_it_needs_and_whether_that_crowds_the_gpu(monkeypatch):
    """The Footprint that keeps the judges ahead off CUDA beside a pair needing over half of the GPU."""
    from harness import judge_memory

    sent = []
    report = SimpleNamespace(send=sent.append)
    path = ROOT / "problems" / "sigmoid.py"
    memory = judge_memory.PairMemory(torch.device("cuda", 0), path.read_text(), {}, sigmoid_sizes())
    monkeypatch.setattr(judge_memory, "free_memory", lambda device: 79 << 30)
    monkeypatch.setattr(judge_memory, "total_memory", lambda device: 80 << 30)
    memory.check(report)  # the full-size sigmoid: 44 GiB of 80
    memory.sizes = sigmoid_sizes(batch_size=256)  # 0.4 GiB a tensor
    memory.check(report)
    assert [(m.need_mb >> 10, m.device_mb >> 10, m.crowded) for m in sent] == [(44, 80, True), (4, 80, False)]


def test_the_least_is_never_more_than_the_budget():
    for size in (sigmoid_sizes(), problem_info.Sizes(1, 10, 100, ()), problem_info.Sizes(100, 10, 1, ())):
        assert footprint.least(size) <= footprint.harness(size)


@pytest.mark.gpu
def test_every_block_the_judge_holds_at_its_peak_is_named_and_within_the_budget(tmp_path):
    """A sigmoid pair (384 MiB a tensor) under the judge's memory history: each block live at the judge's peak was
    allocated by a harness function we can name, and the peak is within footprint.judge's budget."""
    import json
    import os
    import subprocess
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    from memory_footprint import peak_blocks

    env = {**os.environ, "HARNESS_MEMORY_HISTORY": str(tmp_path / "history")}
    proc = subprocess.run([sys.executable, "run.py", "--problem", "sigmoid", "--solution",
                           str(ROOT / "bench" / "memory" / "aa_sigmoid.py"), "--set", "batch_size=256",
                           "--out", str(tmp_path / "run")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads((tmp_path / "run" / "results.jsonl").read_text().splitlines()[0])
    assert record["status"] == "correct", record["error"]
    history = peak_blocks(tmp_path / "history" / "sigmoid__aa_sigmoid.pickle")
    size = sigmoid_sizes(batch_size=256)
    assert history["peak_allocated"] <= footprint.judge(size) + footprint.SLACK, history
    assert "unattributed" not in history["blocks_at_peak"], history["blocks_at_peak"]
    assert record["peak_mem_mb"]["judge"] * 2**20 <= footprint.judge(size) + footprint.SLACK, record["peak_mem_mb"]
    assert record["peak_mem_mb"]["reference_worker"] is not None


def test_a_candidates_out_of_memory_is_its_own_only_beyond_its_allowance():
    """worker_out_of_memory reads torch's figures: an honest candidate (four outputs' worth) that the device cannot
    hold beside the harness is no runtime_error of its own; a hoarder is."""
    from harness.judge_memory import PairMemory, oom_demand

    def torch_message(tried: str, allocated: str) -> str:
        return (f"forward raised OutOfMemoryError: CUDA out of memory. Tried to allocate {tried}. GPU 0 has a total "
                f"capacity of 39.38 GiB of which 1.20 GiB is free. Process 77 has 38.1 GiB memory in use. Of the "
                f"allocated memory {allocated} is allocated by PyTorch, and 20.00 MiB is reserved by PyTorch but "
                f"unallocated.")

    assert oom_demand(torch_message("6.00 GiB", "18.00 GiB")) == 24 << 30
    assert oom_demand("forward raised OutOfMemoryError: out of memory") is None
    memory = PairMemory(torch.device("cuda", 0), "batch_size = 4096\n", {}, sigmoid_sizes())  # allowance 25 GiB,
    # the harness's share 6 GiB
    honest = memory.worker_out_of_memory(torch_message("6.00 GiB", "24.00 GiB"))  # 24 GiB its own
    assert honest.status == Status.SKIPPED and "not by the candidate's doing" in honest.error
    hoarder = memory.worker_out_of_memory(torch_message("40.00 GiB", "6.00 GiB"))
    assert hoarder.status == Status.RUNTIME_ERROR and "over its allowance of 25.0 GiB" in hoarder.error
    # A reference whose own call allocates more than its output (a convolution's cuDNN workspace, measured in the
    # judge): the candidate may hold twice that. KernelBench's 50_conv_standard_2D, A/A, capped to 24 GiB on the
    # H100: its worker held 17.5 GiB of its own, was blamed against an allowance of 1.8 GiB.
    conv = problem_info.Sizes(inputs=150 << 20, outputs=290 << 20, weights=1 << 20, output_dtypes=(torch.float32,))
    memory.sizes, memory.reference_call_peak = conv, 17 << 30
    assert footprint.candidates_own(conv, 17_800 << 20)[2]  # by the sizes alone: its doing
    verdict = memory.worker_out_of_memory(torch_message("2.00 GiB", "15.50 GiB"))
    assert verdict.status == Status.SKIPPED and "allowance of 35.3 GiB" in verdict.error, verdict.error
    memory.sizes = None  # not sized: as raised
    assert memory.worker_out_of_memory(torch_message("1 GiB", "1 GiB")).status == Status.RUNTIME_ERROR


def test_a_pair_that_leaves_no_room_to_measure_the_peaks_goes_without_a_speed_of_light(monkeypatch, tmp_path):
    """The device's peaks are measured once per machine, after the first pair's timing (~5 GiB on a GPU): beside a
    pair that fills the GPU that may run out of memory, which costs the pair its SOL figures and nothing else."""
    from harness import roofline
    from harness.judge_timing import PairTiming
    from harness.records import Result

    def no_room(*args):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(roofline, "device_peaks", no_room)
    notes = []
    pair = SimpleNamespace(result=Result(problem="p", solution="s", status=Status.CORRECT, new_ms=1.0, ref_ms=1.0),
                           device=torch.device("cpu"), job={"peaks_dir": str(tmp_path)},
                           judge=SimpleNamespace(compute_dtype=torch.float32, note=notes.append))
    PairTiming.record_roofline(pair)
    assert pair.result.sol_pct is None and pair.result.status == Status.CORRECT
    assert notes and "no speed of light" in notes[0]
