"""Is another process using the GPU? A one-thread PTX kernel spins on the global timer for longer than a time slice
and counts the jumps in its readings (docs/decisions/timing-rounds.md)."""
from __future__ import annotations

import ctypes
import time

import torch

GAP_NS = 20_000  # a jump of the global timer beyond this is time the GPU spent elsewhere

PTX = r"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry probe(.param .u64 out, .param .u64 duration)
{
  .reg .u64 %start, %now, %last, %gap, %limit, %elapsed, %out, %gaps, %away;
  .reg .pred %jumped, %again;
  ld.param.u64 %out, [out];
  cvta.to.global.u64 %out, %out;
  ld.param.u64 %limit, [duration];
  mov.u64 %start, %globaltimer;
  mov.u64 %last, %start;
  mov.u64 %gaps, 0;
  mov.u64 %away, 0;
LOOP:
  mov.u64 %now, %globaltimer;
  sub.u64 %gap, %now, %last;
  setp.gt.u64 %jumped, %gap, GAP_NS;
  @%jumped add.u64 %gaps, %gaps, 1;
  @%jumped add.u64 %away, %away, %gap;
  mov.u64 %last, %now;
  sub.u64 %elapsed, %now, %start;
  setp.lt.u64 %again, %elapsed, %limit;
  @%again bra LOOP;
  st.global.u64 [%out], %gaps;
  st.global.u64 [%out+8], %away;
  ret;
}
""".replace("GAP_NS", str(GAP_NS))


class ProbeUnavailable(RuntimeError):
    """The driver API or the PTX could not be loaded here."""


class GpuProbe:
    """Probes of one GPU from this process (which has torch's context on it)."""

    def __init__(self, device: torch.device, duration_ms: float):
        self.device, self.duration_ns = device, int(duration_ms * 1e6)
        try:
            self.cuda = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise ProbeUnavailable(f"no CUDA driver library: {exc}") from None
        self.out = torch.zeros(2, dtype=torch.int64, device=device)  # also makes our context current
        self.module, self.kernel = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.cuda.cuModuleLoadData(ctypes.byref(self.module), ctypes.c_char_p(PTX.encode() + b"\0")))
        self.check(self.cuda.cuModuleGetFunction(ctypes.byref(self.kernel), self.module, b"probe"))
        self.busy_probes, self.waited_ms = 0, 0.0

    @staticmethod
    def check(code: int) -> None:
        if code != 0:
            raise ProbeUnavailable(f"CUDA driver error {code}")

    def other_work_ms(self) -> float:
        """Run one probe: milliseconds of it that the GPU spent on other contexts (0.0: the GPU was ours)."""
        out, duration = ctypes.c_uint64(self.out.data_ptr()), ctypes.c_uint64(self.duration_ns)
        args = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(out), ctypes.c_void_p),
                                     ctypes.cast(ctypes.byref(duration), ctypes.c_void_p))
        stream = ctypes.c_void_p(torch.cuda.current_stream(self.device).cuda_stream)
        self.check(self.cuda.cuLaunchKernel(self.kernel, 1, 1, 1, 1, 1, 1, 0, stream, args, None))
        gaps, away_ns = self.out.tolist()  # waits for the probe
        if gaps:
            self.busy_probes += 1
        return away_ns / 1e6

    def wait_until_ours(self, limit_s: float) -> bool:
        """Probe until the GPU is ours, at most `limit_s`; whether it was. Adds the wait to `waited_ms`."""
        started = time.perf_counter()
        try:
            while self.other_work_ms() > 0:
                if time.perf_counter() - started > limit_s:
                    return False
            return True
        finally:
            self.waited_ms += (time.perf_counter() - started) * 1e3
