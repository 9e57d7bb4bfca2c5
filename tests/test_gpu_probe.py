"""The GPU probe (harness/judge/gpu_probe.py): a one-thread kernel that reads the GPU's global timer and counts the time the GPU
spent on other contexts. On the CPU: what it is made of and how it fails; on a GPU: an idle GPU is ours, a busy one is not."""
import subprocess
import sys
import time

import pytest
import torch

from harness.judge import gpu_probe


def test_the_probe_kernel_has_its_gap_threshold_written_in():
    assert "GAP_NS" not in gpu_probe.PTX and f"%gap, {gpu_probe.GAP_NS};" in gpu_probe.PTX
    assert ".entry probe(" in gpu_probe.PTX


def test_no_driver_library_is_a_probe_unavailable_not_a_crash(monkeypatch):
    def no_library(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(gpu_probe.ctypes, "CDLL", no_library)
    with pytest.raises(gpu_probe.ProbeUnavailable, match="no CUDA driver library"):
        gpu_probe.GpuProbe(torch.device("cuda", 0), duration_ms=5)


def test_a_driver_error_code_is_a_probe_unavailable():
    gpu_probe.GpuProbe.check(0)
    with pytest.raises(gpu_probe.ProbeUnavailable, match="CUDA driver error 218"):
        gpu_probe.GpuProbe.check(218)


BUSY = """
import sys, torch
x = torch.randn(4096, 4096, device="cuda")
torch.cuda.synchronize()
print("busy", flush=True)
while True:
    for _ in range(50):
        x = (x @ x).tanh_()
    torch.cuda.synchronize()
"""


@pytest.mark.gpu
def test_an_idle_gpu_is_ours_and_a_busy_one_is_not():
    device = torch.device("cuda", 0)
    probe = gpu_probe.GpuProbe(device, duration_ms=5)
    assert probe.wait_until_ours(limit_s=10)  # nothing else runs here (a shared GPU would fail this test)
    busy = subprocess.Popen([sys.executable, "-c", BUSY], stdout=subprocess.PIPE, text=True)
    try:
        assert busy.stdout.readline().strip() == "busy"
        time.sleep(0.2)
        away = [probe.other_work_ms() for _ in range(10)]
        assert max(away) > 0 and probe.busy_probes > 0, away  # the other context's time slices show
        assert not probe.wait_until_ours(limit_s=0.5)
    finally:
        busy.kill()
        busy.wait()
    assert probe.wait_until_ours(limit_s=10)  # its work drains
