"""Timers and roofline helpers on the CPU (the CUDA methods are in test_gpu.py)."""
import time

import torch

from harness import roofline, timing


def test_cpu_timer_measures_a_sleep_with_wall_clock_beside():
    timer = timing.Timer(torch.device("cpu"), cold_cache=True)
    assert timer.flush_buffer.numel() >= 1 << 20
    assert timer.prepare(lambda: time.sleep(0.01), warmup=1) == "perf_counter"
    ms, wall = timer.sample()
    assert 9.0 <= ms < 200.0 and wall == ms


def test_roofline_floor_and_sol():
    peaks = {"copy_gbps": 1000.0, "matmul_tflops": 10.0}
    assert roofline.floor_ms(2_000_000_000, 0, peaks) == 2.0  # 2 GB at 1000 GB/s
    assert roofline.floor_ms(0, 10**12, peaks) == 100.0  # 1 TFLOP at 10 TFLOP/s: 0.1 s
    assert roofline.sol_pct(2.0, 4.0) == 50.0 and roofline.sol_pct(2.0, None) is None


def test_peaks_are_measured_once_and_cached(tmp_path):
    first = roofline.device_peaks(torch.device("cpu"), torch.float32, tmp_path)
    assert first["copy_gbps"] > 0 and first["matmul_tflops"] > 0
    (cached,) = tmp_path.iterdir()
    cached.write_text(cached.read_text().replace(str(first["copy_gbps"]), "123.0"))
    assert roofline.device_peaks(torch.device("cpu"), torch.float32, tmp_path)["copy_gbps"] == 123.0
