"""Speed of light (harness/judge/roofline.py): the floor, and the device's peaks measured once."""
import pytest
import torch

from harness.judge import roofline


def test_roofline_floor_and_sol():
    peaks = {"copy_gbps": 1000.0, "matmul_tflops": 10.0}
    assert roofline.floor_ms(2_000_000_000, 0, peaks) == 2.0  # 2 GB at 1000 GB/s
    assert roofline.floor_ms(0, 10**12, peaks) == 100.0  # 1 TFLOP at 10 TFLOP/s: 0.1 s
    assert roofline.sol_pct(2.0, 4.0) == 50.0 and roofline.sol_pct(2.0, None) is None


def test_flops_the_math_flags_let_run_on_tf32_take_the_tf32_rate():
    """A float32 convolution the reference itself runs on TF32 tensor cores (PyTorch's default for cuDNN) is not
    "faster than the hardware allows": KernelBench's level1 55_, 56_, 62_, 69_, 80_ references were, at 3xTF32."""
    peaks = {"copy_gbps": 1000.0, "matmul_tflops": 10.0, "tf32_tflops": 30.0}
    assert roofline.floor_ms(0, 3 * 10**12, peaks) == 300.0  # all at the float32-accurate rate
    assert roofline.floor_ms(0, 3 * 10**12, peaks, tf32_flops=3 * 10**12) == 100.0
    assert roofline.floor_ms(0, 3 * 10**12, peaks, tf32_flops=1.5 * 10**12) == 200.0  # 50 ms + 150 ms
    cpu_peaks = {"copy_gbps": 1000.0, "matmul_tflops": 10.0}  # no TF32 rate measured: the matmul rate
    assert roofline.floor_ms(0, 10**12, cpu_peaks, tf32_flops=10**12) == 100.0


def test_tf32_flops_are_the_convolutions_under_pytorchs_defaults():
    from torch.utils.flop_counter import FlopCounterMode

    conv, linear = torch.nn.Conv2d(3, 8, 3), torch.nn.Linear(16, 4)
    with FlopCounterMode(display=False) as counter:
        conv(torch.randn(2, 3, 16, 16))
        linear(torch.randn(5, 16))
    counts = counter.get_flop_counts()["Global"]
    conv_flops = 2 * 2 * 8 * 14 * 14 * 3 * 3 * 3
    assert counter.get_total_flops() == conv_flops + 2 * 5 * 16 * 4
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = True, False  # PyTorch's defaults
        assert roofline.tf32_flops(counts) == conv_flops
        torch.backends.cuda.matmul.allow_tf32 = True
        assert roofline.tf32_flops(counts) == counter.get_total_flops()
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = False, False
        assert roofline.tf32_flops(counts) == 0
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def test_peaks_are_measured_in_the_dtype_the_pair_computes_in():
    """Never in an integer dtype: an argmax's int64 output said nothing of its float inputs, and CUDA has no
    int64 matmul to measure (KernelBench's 51_Argmax crashed on the GPU for it)."""
    floats16, ints = torch.ones(2, dtype=torch.float16), torch.ones(2, dtype=torch.int64)
    assert roofline.compute_dtype([ints], [], [ints]) == torch.float32
    assert roofline.compute_dtype([ints, floats16], [], [ints]) == torch.float16
    assert roofline.compute_dtype([ints], [torch.ones(1, dtype=torch.bfloat16)], [floats16]) == torch.bfloat16


def test_peaks_are_measured_once_and_cached(tmp_path):
    first = roofline.device_peaks(torch.device("cpu"), torch.float32, tmp_path)
    assert first["copy_gbps"] > 0 and first["matmul_tflops"] > 0
    (cached,) = tmp_path.iterdir()
    cached.write_text(cached.read_text().replace(str(first["copy_gbps"]), "123.0"))
    assert roofline.device_peaks(torch.device("cpu"), torch.float32, tmp_path)["copy_gbps"] == 123.0


def test_tf32_flops_read_torchs_newer_flags_where_the_old_one_cannot_be_read():
    """torch 2.9 on refuses to read cudnn.allow_tf32 once a problem sets its per-operator flags apart: counting a
    reference's FLOPs must not end its pair (it ran inside the reference's call, a harness_error blaming the problem)."""
    if not hasattr(torch.backends.cudnn, "conv") or not hasattr(torch.backends.cudnn.conv, "fp32_precision"):
        pytest.skip("this torch has no per-operator fp32_precision flags")
    counts = {"aten.convolution": 100, "aten.mm": 10}
    saved = torch.backends.cudnn.conv.fp32_precision
    try:
        torch.backends.cudnn.conv.fp32_precision = "ieee"  # convolutions exact, RNNs still TF32: set apart
        with pytest.raises(RuntimeError):
            torch.backends.cudnn.allow_tf32
        assert roofline.tf32_flops(counts) == 0
        torch.backends.cudnn.conv.fp32_precision = "tf32"
        assert roofline.tf32_flops(counts) == 100
    finally:
        torch.backends.cudnn.conv.fp32_precision = saved
