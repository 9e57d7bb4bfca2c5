"""Isolation on a GPU (issue 15): attacks that slow the reference down gain nothing, honest candidates of the same op
stay ties, and another process's GPU work during the timing is seen (rounds dropped, `interference`). Judged
as a user runs the harness (no --device flag) on the relu fixture at the full-size sigmoid's shape
(4096 x 393216 floats, 6.4 GB: about 4.5 ms a call on the H100), where the GPU hog once won 1.28x."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import ROOT, judge_run

pytestmark = pytest.mark.gpu
HERE = Path(__file__).resolve().parent
FULL_SIZE = ("--set", "batch_size=4096", "--set", "dim=393216")
ATTACKS = [HERE / "cuda" / "hogs_the_gpu_while_idle.py", HERE / "cuda" / "hog_child_on_the_gpu.py",
           HERE / "cpu" / "pulses_the_reference.py", HERE / "cpu" / "hogs_while_idle.py",
           HERE / "cpu" / "slows_the_reference.py"]
HONEST = [ROOT / "tests" / "fixtures" / "solutions" / "fx_relu" / "aa_reference.py",
          HERE / "cpu" / "calls_the_reference_op.py"]
CAUGHT = {"interference", "timer_tampering"}
def judge(problem: str, solutions: list, out: Path, *extra: str) -> dict:
    return judge_run(problem, solutions, out, HERE / "isolation-gpu.yaml", 60, *extra)[0]


GPU_HOG = "import torch\na = torch.randn(4096, 4096, device='cuda')\nwhile True:\n    a @ a\n    torch.cuda.synchronize()\n"


@pytest.fixture(scope="module")
def isolation_run(tmp_path_factory):
    """The attacks and the honest ones in one run; HARNESS_GPU_ISOLATION_OUT keeps its folder (the GPU acceptance
    script reads it)."""
    kept = os.environ.get("HARNESS_GPU_ISOLATION_OUT")
    out = Path(kept) if kept else tmp_path_factory.mktemp("isolation")
    return judge("tests/fixtures/problems/fx_relu.py", ATTACKS + HONEST, out, *FULL_SIZE)


@pytest.mark.parametrize("attack", [p.stem for p in ATTACKS])
def test_an_attack_on_the_reference_gains_nothing(isolation_run, attack):
    result = isolation_run[attack]
    assert result["status"] == "correct", result["error"]
    caught = CAUGHT & set(result["flags"])  # flagged: then no speedup at all may be reported (interference)
    assert caught or result["speedup"] <= 1.05, (result["speedup"], result["flags"])


@pytest.mark.parametrize("honest", [p.stem for p in HONEST])
def test_an_honest_candidate_of_the_same_op_is_in_the_tie_band(isolation_run, honest):
    """Within 2% of 1 and not flagged. (Whether its CI holds 1, the rest of `tie`, is issue 16's: on the H100 an
    A/A pair here came out 0.9946 [0.9923, 0.9998].)"""
    result = isolation_run[honest]
    assert result["status"] == "correct" and 0.98 <= result["speedup"] <= 1.02, (
        result["speedup"], result["speedup_ci_low"], result["speedup_ci_high"])
    assert not CAUGHT & set(result["flags"]), result["flags"]


def test_another_process_on_the_gpu_is_seen(tmp_path):
    """A process outside the pair runs matmuls throughout: every round has it on the GPU, none counts."""
    hog = subprocess.Popen([sys.executable, "-c", GPU_HOG])
    try:
        time.sleep(5)  # its CUDA start
        results = judge("tests/fixtures/problems/fx_relu.py", HONEST[:1], tmp_path)
    finally:
        hog.kill()
    result = results["aa_reference"]
    assert "interference" in result["flags"], result["flags"]
    assert result["rounds_discarded"] >= 1 and result["speedup"] is None, (result["rounds_discarded"], result["speedup"])
