"""Whether a judge's driver calls on one GPU slow down while another GPU's judge makes the same calls (issue 63's
two-GPU scaling): per GPU, the seconds of CUDA start-ups in fresh processes, of cudaMalloc/cudaFree, and of tensors
handed to another process over CUDA IPC (as the judge hands inputs to its workers); first on GPU 0 alone, then on
every GPU at once.
    python bench/driver_contention.py [--out FILE.json]
Prints one JSON line: each test's seconds alone and together (the median over the GPUs)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.multiprocessing as mp

START = "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"


def starts(count: int = 6) -> float:
    """Seconds of `count` fresh Python processes each starting CUDA, one after another."""
    began = time.perf_counter()
    for _ in range(count):
        subprocess.run([sys.executable, "-c", START], check=True)
    return time.perf_counter() - began


def mallocs(count: int = 150, mb: int = 256) -> float:
    """Seconds of `count` cudaMalloc/cudaFree pairs of `mb` MB (the caching allocator emptied each time)."""
    torch.cuda.synchronize()
    began = time.perf_counter()
    for _ in range(count):
        block = torch.empty(mb << 20, dtype=torch.uint8, device="cuda")
        block[0] = 1
        del block
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return time.perf_counter() - began


def receive(handles, done) -> None:
    """Open each tensor handed over, read it, let it go."""
    while True:
        tensor = handles.get()
        if tensor is None:
            return
        tensor.sum().item()
        del tensor
        done.put(True)


def ipc(count: int = 60, mb: int = 64) -> float:
    """Seconds of `count` fresh `mb` MB tensors handed to another process over CUDA IPC, one at a time."""
    context = mp.get_context("spawn")
    handles, done = context.Queue(), context.Queue()
    peer = context.Process(target=receive, args=(handles, done))
    peer.start()
    handles.put(torch.ones(1, device="cuda"))  # the peer's CUDA start-up, untimed
    done.get()
    began = time.perf_counter()
    for _ in range(count):
        tensor = torch.ones(mb << 18, device="cuda")
        handles.put(tensor)
        done.get()
        del tensor
        torch.cuda.ipc_collect()
        torch.cuda.empty_cache()
    took = time.perf_counter() - began
    handles.put(None)
    peer.join()
    return took


def one_gpu(results, gate) -> None:
    """Every test on this process's GPU (CUDA_VISIBLE_DEVICES), started together with the other GPUs' at `gate`."""
    torch.zeros(1, device="cuda")
    gate.wait()
    results.put({"starts": starts(), "mallocs": mallocs(), "ipc": ipc()})


def on(gpus: list) -> dict:
    """Each test's median seconds over `gpus`, run on all of them at once."""
    context = mp.get_context("spawn")
    results, gate = context.Queue(), context.Barrier(len(gpus))
    procs = []
    for gpu in gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
        procs.append(context.Process(target=one_gpu, args=(results, gate)))
        procs[-1].start()
    os.environ.pop("CUDA_VISIBLE_DEVICES")
    each = [results.get() for _ in gpus]
    for proc in procs:
        proc.join()
    return {test: round(statistics.median(r[test] for r in each), 3) for test in each[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="append the JSON line here too")
    args = parser.parse_args()
    gpus = list(range(torch.cuda.device_count()))
    row = {"gpu": torch.cuda.get_device_name(0), "gpus": len(gpus), "alone": on([0]), "together": on(gpus)}
    print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "a") as handle:
            handle.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
