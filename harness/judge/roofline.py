"""Speed of light: a pair's bytes and FLOPs against the device's measured copy bandwidth and matmul rate.

Peaks are measured once per (device, dtype, torch version) and cached on disk as JSON.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import torch

from harness.common.store import write_atomic
from harness.worker.timing import Timer

BELOW_FLOOR = 0.95  # a time under 95% of the roofline floor is faster than the hardware allows


def compute_dtype(*groups) -> torch.dtype:
    """The dtype a pair computes in, for its peaks: the first floating dtype among the tensors of `groups`
    (inputs, then weights, then outputs), else float32. Never an integer dtype: an argmax's int64 output
    says nothing of the rate its float inputs are read at (and CUDA has no int64 matmul to measure)."""
    for group in groups:
        for t in group:
            if isinstance(t, torch.Tensor) and t.is_floating_point():
                return t.dtype
    return torch.float32


def measure_ms(fn, device: torch.device, repeats: int) -> float:
    """Best milliseconds of fn (CUDA events on a GPU, a wall clock on the CPU), after one warm-up: a peak."""
    timer = Timer(device, cold_cache=False)
    fn()
    return min(timer.window(fn)[0] for _ in range(repeats))


def measure_peaks(device: torch.device, dtype: torch.dtype) -> dict:
    """Copy bandwidth (bytes read + written per second), the fastest matmul FLOP/s for `dtype`'s accuracy, and for
    float32 on a GPU the TF32 tensor cores' own rate (tf32_tflops)."""
    big = device.type == "cuda"
    n = 8192 if big else 1024
    # Random data (zeros run faster than real inputs), from a generator of our own: the default one may
    # be left mid-capture by a CUDA graph that failed to capture in this process.
    generator = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, generator=generator).to(dtype)
    b = torch.randn(n, n, device=device, generator=generator).to(dtype)
    flop = 2 * n**3
    peaks = {"matmul_tflops": flop / (measure_ms(lambda: a @ b, device, 10 if big else 3) * 1e9)}
    if dtype == torch.float32 and big:
        # A float32-accurate GEMM may also run on TF32 tensor cores as a 3xTF32 split (three TF32 products),
        # which on an H100 is ~2.6x faster than the CUDA cores: a floor from the CUDA cores alone would flag it.
        peaks["tf32_tflops"] = flop / (tf32_matmul_ms(a, b, device) * 1e9)
        peaks["matmul_tflops"] = max(peaks["matmul_tflops"], peaks["tf32_tflops"] / 3)
    return {"copy_gbps": copy_gbps(device, (2 << 30) if big else (256 << 20)), **peaks}


def tf32_matmul_ms(a: torch.Tensor, b: torch.Tensor, device: torch.device) -> float:
    """Best milliseconds of a @ b in float32 with TF32 tensor cores allowed (the judge's setting is restored)."""
    allowed = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        return measure_ms(lambda: a @ b, device, 10)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allowed


def copy_gbps(device: torch.device, nbytes: int) -> float:
    """Best copy bandwidth (bytes read + written per second) of a device-to-device copy of nbytes."""
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)  # 4-byte elements: the fast copy path
    dst = torch.empty_like(src)
    return 2 * nbytes / (measure_ms(lambda: dst.copy_(src), device, 10) * 1e6)


def device_peaks(device: torch.device, dtype: torch.dtype, cache_dir: Path) -> dict:
    """The cached peaks of this device for `dtype`, measured on first use."""
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    key = "".join(c if c.isalnum() else "_" for c in f"{name}-torch{torch.__version__}-v3")  # v3: tf32_tflops
    path = Path(cache_dir) / f"{key}.json"
    cached = json.loads(path.read_text()) if path.exists() else {}
    label = str(dtype).removeprefix("torch.")
    if label not in cached:
        cached[label] = measure_peaks(device, dtype)
        if device.type == "cuda":  # ~5 GiB of copies and matrices, once per machine: back to the device at once
            torch.cuda.empty_cache()
        write_atomic(path, json.dumps(cached, indent=2, sort_keys=True))
    return cached[label]


def tf32_flops(counts: dict) -> int:
    """Of a call's FLOPs by operator (FlopCounterMode's "Global" counts), those this process's math flags let run on
    TF32 tensor cores: the convolutions' while cuDNN may (PyTorch's default, which the harness keeps: KernelBench's
    semantics), the others' (matmuls, attention) while cuda.matmul.allow_tf32 (off by default). Lenient where a
    kernel keeps float32 accuracy anyway (a depthwise convolution off cuDNN, say): a floor may be too low, never
    high."""
    convolutions, others = tf32_convolutions(), bool(torch.backends.cuda.matmul.allow_tf32)
    return sum(n for op, n in counts.items() if (convolutions if "convolution" in str(op) else others))


def tf32_convolutions() -> bool:
    """May float32 convolutions run on TF32 tensor cores here? cudnn.allow_tf32, which torch (2.9 on) refuses to read
    once a problem has set its newer per-operator flags apart (cudnn.conv.fp32_precision = "ieee", say): then the
    convolutions' own flag, or the first it inherits from that is set."""
    try:
        return bool(torch.backends.cudnn.allow_tf32)
    except RuntimeError:
        backends = torch.backends
        chain = (backends.cudnn.conv.fp32_precision, backends.cudnn.fp32_precision,  # type: ignore[attr-defined]
                 backends.fp32_precision)  # type: ignore[attr-defined]  # (torch 2.9 on)
        return next((p for p in chain if p != "none"), "ieee") == "tf32"


def floor_ms(nbytes: int, flops: int, peaks: dict, tf32_flops: int = 0) -> float:
    """The roofline floor: the larger of moving the bytes at copy bandwidth and doing the FLOPs at peak rate, the
    `tf32_flops` of them (a float32 pair's that may run on TF32 tensor cores) at the TF32 rate where one was measured,
    then the rest at the float32-accurate matmul rate (the two times added: both use the tensor cores). (At 3xTF32's
    rate alone, KernelBench's level1 convolutions 55_, 56_, 62_, 69_ and 80_ ran their references' own TF32
    convolutions "faster than the hardware allows".)"""
    matmul = peaks["matmul_tflops"]
    tf32 = max(peaks.get("tf32_tflops", matmul), matmul)
    compute_ms = (tf32_flops / tf32 + (flops - tf32_flops) / matmul) / 1e9
    return max(nbytes / (peaks["copy_gbps"] * 1e6), compute_ms)


def sol_pct(floor: float, ms: Optional[float]) -> Optional[float]:
    """Percent of speed of light: 100 x floor / measured time."""
    return None if not ms else 100.0 * floor / ms
