"""Speed of light: a pair's bytes and FLOPs against the device's measured copy bandwidth and matmul rate, measured once
per (device, dtype, torch version) and cached as JSON. The TF32 rules: docs/decisions/roofline-tf32.md"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import torch

from harness.common.store import write_atomic
from harness.worker.timing import Timer

BELOW_FLOOR = 0.95  # a time under 95% of the roofline floor is faster than the hardware allows


def compute_dtype(*groups) -> torch.dtype:
    """The first floating dtype among `groups`' tensors, else float32 (never an integer: an argmax's int64 output)."""
    for group in groups:
        for t in group:
            if isinstance(t, torch.Tensor) and t.is_floating_point():
                return t.dtype
    return torch.float32


def measure_ms(fn, device: torch.device, repeats: int) -> float:
    """Best milliseconds of fn after one warm-up: a peak."""
    timer = Timer(device, cold_cache=False)
    fn()
    return min(timer.window(fn)[0] for _ in range(repeats))


def measure_peaks(device: torch.device, dtype: torch.dtype) -> dict:
    """Copy bandwidth, the fastest matmul rate at `dtype`'s accuracy and, for float32 on a GPU, the TF32 rate."""
    big = device.type == "cuda"
    n = 8192 if big else 1024
    # Random (zeros run faster), from our own generator: a failed graph capture can leave the default one mid-capture.
    generator = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, generator=generator).to(dtype)
    b = torch.randn(n, n, device=device, generator=generator).to(dtype)
    flop = 2 * n**3
    peaks = {"matmul_tflops": flop / (measure_ms(lambda: a @ b, device, 10 if big else 3) * 1e9)}
    if dtype == torch.float32 and big:
        # A float32-accurate GEMM may run as a 3xTF32 split: docs/decisions/roofline-tf32.md
        peaks["tf32_tflops"] = flop / (tf32_matmul_ms(a, b, device) * 1e9)
        peaks["matmul_tflops"] = max(peaks["matmul_tflops"], peaks["tf32_tflops"] / 3)
    return {"copy_gbps": copy_gbps(device, (2 << 30) if big else (256 << 20)), **peaks}


def tf32_matmul_ms(a: torch.Tensor, b: torch.Tensor, device: torch.device) -> float:
    """Best milliseconds of a @ b with TF32 allowed (the setting restored)."""
    allowed = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        return measure_ms(lambda: a @ b, device, 10)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allowed


def copy_gbps(device: torch.device, nbytes: int) -> float:
    """Best bytes read + written per second of a device-to-device copy of nbytes."""
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
        if device.type == "cuda":  # ~5 GiB, once per machine: handed back at once
            torch.cuda.empty_cache()
        write_atomic(path, json.dumps(cached, indent=2, sort_keys=True))
    return cached[label]


def tf32_flops(counts: dict) -> int:
    """Of a call's FLOPs by operator, those the math flags let run on TF32 (lenient: a floor too low, never high)."""
    convolutions, others = tf32_convolutions(), bool(torch.backends.cuda.matmul.allow_tf32)
    return sum(n for op, n in counts.items() if (convolutions if "convolution" in str(op) else others))


def tf32_convolutions() -> bool:
    """May float32 convolutions run on TF32? Torch 2.9+ refuses cudnn.allow_tf32 once per-operator flags are set."""
    try:
        return bool(torch.backends.cudnn.allow_tf32)
    except RuntimeError:
        backends = torch.backends
        chain = (backends.cudnn.conv.fp32_precision, backends.cudnn.fp32_precision,
                 backends.fp32_precision)  # (torch 2.9 on)
        return next((p for p in chain if p != "none"), "ieee") == "tf32"


def floor_ms(nbytes: int, flops: int, peaks: dict, tf32_flops: int = 0) -> float:
    """max(bytes at copy bandwidth, `tf32_flops` at the TF32 rate plus the rest at the matmul rate)."""
    matmul = peaks["matmul_tflops"]
    tf32 = max(peaks.get("tf32_tflops", matmul), matmul)
    compute_ms = (tf32_flops / tf32 + (flops - tf32_flops) / matmul) / 1e9
    return max(nbytes / (peaks["copy_gbps"] * 1e6), compute_ms)


def sol_pct(floor: float, ms: Optional[float]) -> Optional[float]:
    """Percent of speed of light: 100 x floor / measured time."""
    return None if not ms else 100.0 * floor / ms
