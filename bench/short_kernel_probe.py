"""Probe for fidelity part (b): how per-call estimators of a microsecond kernel compare with the profiler.

Prints, for torch.sigmoid on 16 x 4096 float32 after a cache flush that writes (add_) or only reads (sum):
the profiler's kernel time, and the CUDA-graph estimate (k x (flush, call) minus k x flush) / k.
"""
import torch
from torch.profiler import ProfilerActivity, profile

N, K = 16 * 4096, 256
x = torch.rand(N, device="cuda")
buf = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
FLUSHES = {"write": lambda: buf.add_(1), "read": lambda: buf.sum()}


def graph_of(body):
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        body()
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        body()
    return g


def replay_ms(g, reps=20):
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


for name, flush in FLUSHES.items():
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(200):
            flush()
            torch.sigmoid(x)
        torch.cuda.synchronize()
    kern = [e.device_time for e in prof.events() if "sigmoid" in e.name.lower() and e.device_time > 0]
    print(f"flush={name}: profiler {sum(kern) / len(kern):.2f} us")
    for k in (12, 29):
        full = graph_of(lambda: [(flush(), torch.sigmoid(x)) for _ in range(k)])
        only = graph_of(lambda: [flush() for _ in range(k)])
        f_ms, o_ms = replay_ms(full), replay_ms(only)
        # Interleaved like the harness: one full window then one flush window, per sample.
        diffs = sorted(replay_ms(full, 1) - replay_ms(only, 1) for _ in range(50))
        print(f"  k={k}: separate medians {(f_ms - o_ms) / k * 1e3:.2f} us/call "
              f"(full {f_ms:.4f} ms, flush {o_ms:.4f} ms); interleaved median {diffs[25] / k * 1e3:.2f} us/call")


def flush_then_discard(k):
    """The harness's shape: each call's output dropped at once, so one output block serves every call."""
    for _ in range(k):
        buf.add_(1)
        torch.sigmoid(x)


for k in (12, 29):
    full, only = graph_of(lambda: flush_then_discard(k)), graph_of(lambda: [buf.add_(1) for _ in range(k)])
    diffs = sorted(replay_ms(full, 1) - replay_ms(only, 1) for _ in range(50))
    print(f"discarded outputs, k={k}: interleaved median {diffs[25] / k * 1e3:.2f} us/call")


def idle_then(first, second, k, idle_s=0.005, reps=50):
    """Median of (first - second) per call when each sample follows an idle gap, like the harness's rounds."""
    import time
    diffs = []
    for _ in range(reps):
        time.sleep(idle_s)
        a = replay_ms(first, 1)
        diffs.append(a - replay_ms(second, 1))
    return sorted(diffs)[reps // 2] / k * 1e3


def idle_abba(full, only, k, idle_s=0.005, reps=50):
    """The harness's sample since the fix: an untimed flush replay, then full, flush, flush, full."""
    import time
    diffs = []
    for _ in range(reps):
        time.sleep(idle_s)
        only.replay()
        a1, b1, b2, a2 = (replay_ms(g, 1) for g in (full, only, only, full))
        diffs.append((a1 + a2 - b1 - b2) / 2)
    return sorted(diffs)[reps // 2] / k * 1e3


for k in (12, 29):
    full, only = graph_of(lambda: flush_then_discard(k)), graph_of(lambda: [buf.add_(1) for _ in range(k)])
    print(f"idle gaps, k={k}: full first {idle_then(full, only, k):.2f} us/call, "
          f"flush first {-idle_then(only, full, k):.2f} us/call, ABBA {idle_abba(full, only, k):.2f} us/call")
