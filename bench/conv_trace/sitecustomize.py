"""A diagnostic, not part of the harness: with this folder on PYTHONPATH (and CONV_TRACE_DIR set), every process of a
run, forked workers included, appends one line per convolution call to CONV_TRACE_DIR/conv-PID.log: its side (judge,
candidate's worker, reference's worker), the harness function that called it, the device's free memory and this
process's reserved and allocated memory before the call, and its reserved memory and peak after (cuDNN chooses an
algorithm by the room it finds: issue 37's capped sweeps)."""
import os
import sys
import time
import traceback

TRACE_DIR = os.environ.get("CONV_TRACE_DIR")


def side() -> str:
    if "candidate_module" in sys.modules:
        return "candidate"
    if "reference_module" in sys.modules:
        return "reference"
    return "judge"


def caller() -> str:
    frames = [f for f in traceback.extract_stack()[:-2] if "/harness/" in f.filename]
    return ">".join(f.name for f in frames[-3:]) or "-"


def traced(name, function):
    def call(*args, **kwargs):
        import torch
        x = args[0] if args else None
        if not (isinstance(x, torch.Tensor) and x.is_cuda) or torch.cuda.is_current_stream_capturing():
            return function(*args, **kwargs)
        gib = 2 ** 30
        free = torch.cuda.mem_get_info(x.device)[0]
        reserved, allocated = torch.cuda.memory_reserved(x.device), torch.cuda.memory_allocated(x.device)
        peak_before = torch.cuda.max_memory_reserved(x.device)
        out = function(*args, **kwargs)
        torch.cuda.synchronize(x.device)
        line = (f"{time.time():.3f} pid={os.getpid()} {side()} {name} {tuple(x.shape)} {x.dtype} by={caller()} "
                f"free={free / gib:.2f} reserved={reserved / gib:.2f} allocated={allocated / gib:.2f} "
                f"-> reserved={torch.cuda.memory_reserved(x.device) / gib:.2f} "
                f"peak={torch.cuda.max_memory_reserved(x.device) / gib:.2f} (before {peak_before / gib:.2f})\n")
        with open(os.path.join(TRACE_DIR, f"conv-{os.getpid()}.log"), "a") as log:
            log.write(line)
        return out
    return call


if TRACE_DIR:
    import torch.nn.functional as F
    for _name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        setattr(F, _name, traced(_name, getattr(F, _name)))
