"""The harness's GPU memory budget (harness/judge/footprint.py), reckoned on the meta device, and the pre-flight check."""
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from harness.judge import footprint
from harness.common import problem_info
from harness.common.load import load_module
from harness.common.verdict import Status
from support import pair_job

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

    def judge_sigmoid(batch_size: int, out: str, env: dict) -> dict:
        proc = subprocess.run([sys.executable, "run.py", "--problem", "sigmoid", "--solution",
                               str(ROOT / "bench" / "memory" / "aa_sigmoid.py"), "--set", f"batch_size={batch_size}",
                               "--out", str(tmp_path / out)], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        record = json.loads((tmp_path / out / "results.jsonl").read_text().splitlines()[0])
        assert record["status"] == "correct", record["error"]
        return record

    # The device's peaks are measured once per machine by the first pair's judge (~5 GiB for a moment, outside the
    # budget: footprint.py): measured here first, so that the pair below is any later pair (on a fresh H200 this test,
    # run before any other pair, found the measurement's 2 GiB copies at the judge's peak).
    first = judge_sigmoid(16, "peaks", dict(os.environ))
    assert first["sol_pct"] is not None, first["notes"]  # the peaks were measured (or were there): none to come
    record = judge_sigmoid(256, "run", {**os.environ, "HARNESS_MEMORY_HISTORY": str(tmp_path / "history")})
    history = peak_blocks(tmp_path / "history" / "sigmoid__aa_sigmoid.pickle")
    size = sigmoid_sizes(batch_size=256)
    assert history["peak_allocated"] <= footprint.judge(size) + footprint.SLACK, history
    assert "unattributed" not in history["blocks_at_peak"], history["blocks_at_peak"]
    assert record["peak_mem_mb"]["judge"] * 2**20 <= footprint.judge(size) + footprint.SLACK, record["peak_mem_mb"]
    assert record["peak_mem_mb"]["reference_worker"] is not None


@pytest.mark.gpu
def test_the_pair_that_measures_the_devices_peaks_reports_its_own_peak_alone(tmp_path):
    """The first pair on a machine measures the device's peaks (2 GiB copies, 8192x8192 matrices): its judge's
    reported peak leaves them out (a 16x393216 sigmoid, 24 MiB a tensor, reported a 5 GiB judge at c247478)."""
    import json
    import subprocess
    import sys

    config = tmp_path / "fresh-peaks.yaml"
    config.write_text(f"peaks_cache_dir: {tmp_path / 'peaks'}\n")  # none measured yet: this pair measures them
    proc = subprocess.run([sys.executable, "run.py", "--problem", "sigmoid", "--solution",
                           str(ROOT / "bench" / "memory" / "aa_sigmoid.py"), "--set", "batch_size=16",
                           "--config", str(config), "--out", str(tmp_path / "run")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads((tmp_path / "run" / "results.jsonl").read_text().splitlines()[0])
    assert record["status"] == "correct" and record["sol_pct"] is not None, record  # the peaks were measured here
    assert list((tmp_path / "peaks").glob("*.json")), "the pair did not measure the device's peaks"
    assert record["peak_mem_mb"]["judge"] < 1024, record["peak_mem_mb"]  # the copies alone are 4 GiB


def test_a_pair_that_leaves_no_room_to_measure_the_peaks_goes_without_a_speed_of_light(monkeypatch, tmp_path):
    """The device's peaks are measured once per machine, after the first pair's timing (~5 GiB on a GPU): beside a
    pair that fills the GPU that may run out of memory, which costs the pair its SOL figures and nothing else."""
    from harness.judge import roofline
    from harness.judge.memory import PairMemory
    from harness.judge.reports import TimingReport
    from harness.judge.timing import PairTiming

    def no_room(*args):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(roofline, "device_peaks", no_room)
    notes = []
    pair = SimpleNamespace(report=TimingReport(new_ms=1.0, ref_ms=1.0),
                           device=torch.device("cpu"), job=pair_job(peaks_dir=str(tmp_path)),
                           reference=SimpleNamespace(compute_dtype=torch.float32),
                           ctx=SimpleNamespace(note=notes.append, memory=PairMemory(torch.device("cpu"), "", {}, None)))
    PairTiming.record_roofline(pair)
    assert pair.report.sol_pct is None and pair.report.floor_ms is None and not pair.report.flags
    assert notes and "no speed of light" in notes[0]
