"""What the GPU lets one process see of another's work (H100 experiment for issue 15).

Measures, and prints as JSON lines:
  nvml     per-process utilization samples from NVML while another process runs matmuls: their spacing,
           and whether NVML's PIDs are ours;
  probe    a one-thread kernel that spins on %globaltimer and records gaps (the GPU switching to another
           context), idle and while another process runs matmuls;
  drain    how long GPU work queued by a process goes on after that process is SIGSTOPped;
  ipc      what a process that is sent one tensor can read through its mapping (cuMemGetAddressRange):
           a tensor from the caching allocator vs one from a MemPool of its own, and across users.
Usage: python bench/isolation_probe.py
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time

HOG = r"""
import os, sys, time, torch
torch.backends.cuda.matmul.allow_tf32 = False
a = torch.randn(4096, 4096, device="cuda"); b = torch.randn(4096, 4096, device="cuda")
torch.cuda.synchronize(); print(os.getpid(), flush=True)
mode, seconds = sys.argv[1], float(sys.argv[2])
if mode == "loop":
    end = time.time() + seconds
    while time.time() < end:
        for _ in range(8): a @ b
        torch.cuda.synchronize()
else:  # queue: many matmuls without waiting, then idle
    for _ in range(int(seconds)): a @ b
    print("queued", flush=True); time.sleep(600)
"""


def emit(**fields):
    print(json.dumps(fields), flush=True)


def start_hog(mode: str, amount: float):
    proc = subprocess.Popen([sys.executable, "-c", HOG, mode, str(amount)], stdout=subprocess.PIPE, text=True)
    pid = int(proc.stdout.readline())
    return proc, pid


def nvml_samples(seconds: float):
    import pynvml

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    hog, hog_pid = start_hog("loop", seconds + 1)
    time.sleep(0.5)
    seen, last = [], 0
    end = time.time() + seconds
    while time.time() < end:
        try:
            for s in pynvml.nvmlDeviceGetProcessUtilization(handle, last):
                seen.append((s.pid, s.timeStamp, s.smUtil, s.memUtil))
                last = max(last, s.timeStamp)
        except pynvml.NVMLError as exc:
            seen.append(("error", str(exc)))
        time.sleep(0.01)
    procs = [p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)]
    hog.kill()
    stamps = sorted({s[1] for s in seen if s[0] != "error"})
    gaps = [(b - a) / 1000 for a, b in zip(stamps, stamps[1:])]
    emit(part="nvml", hog_pid=hog_pid, my_pid=os.getpid(), running=procs, samples=len(seen),
         first=seen[:6], sample_spacing_ms=gaps[:20])


PTX = r"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry probe(.param .u64 out, .param .u64 dur)
{
  .reg .u64 %t0, %t, %last, %gap, %maxgap, %d, %el, %p, %n, %sum;
  .reg .pred %q, %r;
  ld.param.u64 %p, [out];
  cvta.to.global.u64 %p, %p;
  ld.param.u64 %d, [dur];
  mov.u64 %t0, %globaltimer;
  mov.u64 %last, %t0;
  mov.u64 %maxgap, 0;
  mov.u64 %n, 0;
  mov.u64 %sum, 0;
LOOP:
  mov.u64 %t, %globaltimer;
  sub.u64 %gap, %t, %last;
  max.u64 %maxgap, %maxgap, %gap;
  setp.gt.u64 %r, %gap, 20000;
  @%r add.u64 %n, %n, 1;
  @%r add.u64 %sum, %sum, %gap;
  mov.u64 %last, %t;
  sub.u64 %el, %t, %t0;
  setp.lt.u64 %q, %el, %d;
  @%q bra LOOP;
  st.global.u64 [%p], %maxgap;
  st.global.u64 [%p+8], %n;
  st.global.u64 [%p+16], %sum;
  st.global.u64 [%p+24], %el;
  ret;
}
"""


class Probe:
    def __init__(self, torch):
        self.torch = torch
        self.cuda = ctypes.CDLL("libcuda.so.1")
        torch.zeros(1, device="cuda")
        self.mod, self.fn = ctypes.c_void_p(), ctypes.c_void_p()
        check(self.cuda.cuModuleLoadData(ctypes.byref(self.mod), ctypes.c_char_p(PTX.encode() + b"\0")))
        check(self.cuda.cuModuleGetFunction(ctypes.byref(self.fn), self.mod, b"probe"))
        self.out = torch.zeros(4, dtype=torch.int64, device="cuda")

    def run(self, duration_us: float):
        ptr, dur = ctypes.c_uint64(self.out.data_ptr()), ctypes.c_uint64(int(duration_us * 1000))
        args = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(ptr), ctypes.c_void_p),
                                     ctypes.cast(ctypes.byref(dur), ctypes.c_void_p))
        stream = ctypes.c_void_p(self.torch.cuda.current_stream().cuda_stream)
        check(self.cuda.cuLaunchKernel(self.fn, 1, 1, 1, 1, 1, 1, 0, stream, args, None))
        self.torch.cuda.synchronize()
        maxgap, n, total, elapsed = (int(v) for v in self.out.tolist())
        return {"max_gap_us": maxgap / 1e3, "gaps": n, "gap_total_us": total / 1e3, "elapsed_us": elapsed / 1e3}


def check(code):
    if code != 0:
        raise RuntimeError(f"CUDA driver error {code}")


def probe_part(torch):
    probe = Probe(torch)
    for d in (100, 1000, 5000):
        emit(part="probe_idle", duration_us=d, runs=[probe.run(d) for _ in range(3)])
    hog, _ = start_hog("loop", 4)
    time.sleep(0.5)
    for d in (100, 1000, 5000, 20000):
        emit(part="probe_contended", duration_us=d, runs=[probe.run(d) for _ in range(3)])
    hog.kill()
    hog.wait()
    time.sleep(0.2)
    # drain: a process queues many matmuls, is stopped, and we watch for the GPU switching to it
    hog, pid = start_hog("queue", 300)
    hog.stdout.readline()
    os.kill(pid, signal.SIGSTOP)
    stopped = time.perf_counter()
    trace = []
    while time.perf_counter() - stopped < 8:
        r = probe.run(2000)
        trace.append((round((time.perf_counter() - stopped) * 1e3, 1), r["gaps"], r["max_gap_us"]))
        if r["gaps"] == 0 and len(trace) > 3 and all(t[1] == 0 for t in trace[-3:]):
            break
    emit(part="drain", trace=trace[:40], n=len(trace))
    hog.kill()
    os.kill(pid, signal.SIGCONT)
    hog.wait()
    # cost of a probe launch: many short ones
    started = time.perf_counter()
    for _ in range(100):
        probe.run(50)
    emit(part="probe_cost", per_call_us=(time.perf_counter() - started) * 1e4)


def ipc_child(conn, as_user):
    if as_user:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    import torch

    cuda = ctypes.CDLL("libcuda.so.1")
    report = {"uid": os.getuid()}
    try:
        tensors = conn.recv()
    except Exception as exc:
        conn.send({**report, "error": f"{type(exc).__name__}: {exc}"})
        return
    for name, t in tensors.items():
        base, size = ctypes.c_uint64(), ctypes.c_size_t()
        check(cuda.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(t.data_ptr())))
        buf = (ctypes.c_ubyte * size.value)()
        torch.cuda.synchronize()
        check(cuda.cuMemcpyDtoH_v2(buf, base, size))
        marker = torch.full((1024,), 1234.5678, dtype=torch.float32).numpy().tobytes()
        report[name] = {"range_bytes": size.value, "marker_found": bytes(buf).find(marker) >= 0}
    conn.send(report)


def ipc_part(torch, as_user: bool):
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=ipc_child, args=(child, as_user))
    proc.start()
    secret = torch.full((1024,), 1234.5678, device="cuda")  # the judge's own: never to be seen
    plain = torch.ones(1024, device="cuda")  # same small segment as `secret`
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        pooled = torch.ones(1024, device="cuda")
    torch.cuda.synchronize()
    opened = []
    if as_user:  # the ref-count file torch's CUDA IPC makes is 0600: let the other user open it
        for t in (plain, pooled):
            name = t.untyped_storage()._share_cuda_()[4].decode()
            os.chmod("/dev/shm/" + name.lstrip("/"), 0o666)
            opened.append(name)
    try:
        parent.send({"plain": plain, "pooled": pooled})
        emit(part="ipc", as_user=as_user, refcount_files=opened, report=parent.recv())
    except Exception as exc:
        emit(part="ipc", as_user=as_user, error=f"{type(exc).__name__}: {exc}")
    proc.join(30)
    del secret


def main():
    import torch

    emit(part="env", torch=torch.__version__, gpu=torch.cuda.get_device_name(0), uid=os.getuid())
    for step in (lambda: nvml_samples(2.0), lambda: probe_part(torch), lambda: ipc_part(torch, False),
                 lambda: ipc_part(torch, True)):
        try:
            step()
        except Exception as exc:
            emit(part="error", error=f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
