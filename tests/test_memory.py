"""A judge's GPU memory for its pair (harness/judge/memory.py): the pre-flight check and what it tells the runner, and
whose an out-of-memory is (the candidate's only beyond its allowance), all on the CPU with the GPU's figures faked."""
from types import SimpleNamespace

import pytest
import torch

from harness.judge import footprint
from harness.common import problem_info
from harness.common.verdict import Status, Verdict

from test_footprint import ROOT, sigmoid_sizes


def test_a_gpu_pair_that_cannot_fit_is_skipped_with_the_figures_and_the_sizes_to_shrink(monkeypatch):
    """The pre-flight check on a GPU: footprint.pair_need against the free memory; the verdict names both and the
    --set."""
    from harness.judge import memory as judge_memory

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
    from harness.judge import memory as judge_memory

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


def test_a_candidates_out_of_memory_is_its_own_only_beyond_its_allowance():
    """worker_out_of_memory reads torch's figures: an honest candidate (four outputs' worth) that the device cannot
    hold beside the harness is no runtime_error of its own; a hoarder is."""
    from harness.judge.memory import PairMemory, oom_demand

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
    # A reference whose own call allocates more than its output (a convolution's workspace, measured in the judge):
    # the candidate may hold twice that, where the problem's sizes alone (1.8 GiB here) would blame it.
    conv = problem_info.Sizes(inputs=150 << 20, outputs=290 << 20, weights=1 << 20, output_dtypes=(torch.float32,))
    memory.sizes, memory.reference_call_peak = conv, 17 << 30
    assert footprint.candidates_own(conv, 17_800 << 20)[2]  # by the sizes alone: its doing
    verdict = memory.worker_out_of_memory(torch_message("2.00 GiB", "15.50 GiB"))
    assert verdict.status == Status.SKIPPED and "allowance of 35.3 GiB" in verdict.error, verdict.error
    memory.sizes = None  # not sized: as raised
    assert memory.worker_out_of_memory(torch_message("1 GiB", "1 GiB")).status == Status.RUNTIME_ERROR


def test_out_of_memory_is_the_candidates_only_beyond_its_allowance(monkeypatch):
    """PairMemory.blame: the candidate's worker's memory, less the harness's share there (its copy of the inputs),
    against its allowance (twice a reference-sized call, plus 1 GiB); without NVML's figures nobody is blamed."""
    import torch

    from harness.common import clocks
    from harness.judge.memory import PairMemory
    from harness.common.problem_info import Sizes

    sigmoid = Sizes(inputs=6 << 30, outputs=6 << 30, weights=0, output_dtypes=(torch.float32,))  # full size
    memory = PairMemory(torch.device("cuda", 0), "batch_size = 4096\ndim = 393216\n", {}, sigmoid)
    message = "the reference's timing worker failed: forward raised OutOfMemoryError: CUDA out of memory"
    monkeypatch.setattr(clocks, "gpu_memory_of_groups", lambda index, groups: [70 << 30, 13 << 30])
    verdict = memory.blame(message, 11, 22)  # a hoarder: 64 GiB of its own
    assert verdict.status.value == "runtime_error" and "held 70.0 GiB (64.0 GiB its own; allowance 25.0 GiB)" \
        in verdict.error, verdict.error
    # Honest: its output and three full-size temporaries cached, beside the harness's copy of the inputs.
    monkeypatch.setattr(clocks, "gpu_memory_of_groups", lambda index, groups: [30 << 30, 13 << 30])
    verdict = memory.blame(message, 11, 22)
    assert verdict.status.value == "skipped" and "not by the candidate's doing" in verdict.error, verdict.error
    assert "--set (its sizes: batch_size=4096, dim=393216)" in verdict.error  # the device cannot judge it this size
    monkeypatch.setattr(clocks, "gpu_memory_of_groups", lambda index, groups: None)
    verdict = memory.blame(message, 11, 22)  # NVML cannot say
    assert verdict.status.value == "skipped" and "not blamed" in verdict.error
    assert memory.blame("the reference's timing worker failed: KeyError", 11, 22) is None


def test_an_out_of_memory_skip_keeps_its_figures_and_the_set_to_shrink_in_the_record(monkeypatch):
    """torch's message lists every process on the GPU: on an H100 capped to 24 GiB (KernelBench's
    57_conv_transposed_2D) it filled a record's 500 characters, and the figures and the --set were cut off."""
    from harness.common import clocks
    from harness.judge.memory import PairMemory
    from harness.common.problem_info import Sizes
    from harness.common.records import one_line

    processes = " ".join(f"Process {9000 + n} has 624.00 MiB memory in use." for n in range(12))
    message = ("the judge ran out of GPU memory in stage 'timing': CUDA out of memory. Tried to allocate 64.00 MiB. "
               f"GPU 0 has a total capacity of 79.18 GiB of which 21.94 MiB is free. {processes} Of the allocated "
               "memory 5.90 GiB is allocated by PyTorch, and 200.00 MiB is reserved by PyTorch but unallocated.")
    conv = Sizes(inputs=1 << 30, outputs=1 << 30, weights=1 << 20, output_dtypes=(torch.float32,))
    memory = PairMemory(torch.device("cuda", 0), "batch_size = 8\nwidth = 1024\n", {}, conv)
    monkeypatch.setattr(clocks, "gpu_memory_of_groups", lambda index, groups: [4 << 30, 8 << 30])
    monkeypatch.setattr("harness.judge.memory.reserved_here", lambda device: 14 << 30)
    record = one_line(memory.blame(message, 11, 22).error)
    assert record.startswith("the GPU ran out of memory, not by the candidate's doing (the candidate's worker held "
                             "4.0 GiB"), record
    assert "this judge 14.0 GiB" in record and "--set (its sizes: batch_size=8, width=1024)" in record, record
    assert "CUDA out of memory. Tried to allocate 64.00 MiB" in record  # torch's own figures follow
    demand = message.replace("the judge ran out of GPU memory in stage 'timing'", "forward raised OutOfMemoryError")
    demand = demand.replace("5.90 GiB is allocated", "3.90 GiB is allocated")  # 3 GiB its own beside the inputs' copy
    record = one_line(memory.worker_out_of_memory(demand).error)
    assert "within its allowance" in record and "--set (its sizes" in record, record


def test_the_candidate_warms_up_with_the_room_the_reference_took_or_the_pair_is_skipped():
    """Timed alike or not at all: on an H100 capped to 24 GiB the reference's worker kept a 4 GiB cuDNN workspace,
    the A/A candidate's had no room for one and ran a slower algorithm (0.301, correct, no tie)."""
    from harness.judge import memory as judge_memory

    source = (ROOT / "problems" / "sigmoid.py").read_text()
    memory = judge_memory.PairMemory(torch.device("cuda", 0), source, {}, sigmoid_sizes())
    gib = 1 << 30
    memory.check_room_alike(20 * gib, 14 * gib)  # took 6 GiB, 14 left: room for the candidate's
    memory.check_room_alike(10 * gib, 5 * gib)  # took 5, 5 left: the same room
    memory.check_room_alike(10 * gib, 5 * gib - (judge_memory.ROOM_SLACK >> 1))  # within the slack
    with pytest.raises(Verdict) as raised:
        memory.check_room_alike(10 * gib, 4 * gib)  # took 6, 4 left
    assert raised.value.status == Status.SKIPPED
    assert "took 6.0 GiB" in raised.value.error and "left 4.0 GiB" in raised.value.error, raised.value.error
    assert "batch_size=4096" in raised.value.error  # the --set to shrink it


def test_the_sizes_to_shrink_include_arithmetic_and_shapes():
    # KernelBench's level1/98_KLDivLoss writes its sizes so; a hint of `dim=1` alone gave the user nothing to shrink
    source = "batch_size = 8192 * 2\ninput_shape = (8192 * 2,)\ndim = 1\nscale = 0.5\nflag = True\n"
    assert problem_info.shrink_hint(source, {"batch_size": 64}) == (
        "shrink the problem with --set (its sizes: batch_size=64, input_shape=(16384,), dim=1)")
    assert "input_shape=[64]" in problem_info.shrink_hint(source, {"input_shape": [64]})  # --set's tuple, via JSON
