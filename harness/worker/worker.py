"""The untrusted process: imports the candidate, builds ModelNew, runs and times it on the judge's request.

The judge times the reference with this same code in a second worker of its own (class `Model`), so
that both sides are measured by one code path in one kind of process.

Nothing this process says is trusted by the judge: it checks outputs itself and unpickles replies with
an allow-list. The worker only makes honest candidates easy to measure.
"""
from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import signal
import traceback
import types
from typing import Any, Callable, Optional

from harness.worker import timing
from harness.common import channel, handover, semantics
from harness.common.devices import torch_device
from harness.common.inputs import MovingCopies
from harness.common.load import load_module

import torch
from torch.multiprocessing.reductions import StorageWeakRef

BUILDS: dict[str, Any] = {"seconds": 0.0, "error": None}  # time in, and the last failure of, extension builds
POISON_BYTE = 0xFF  # all-ones is NaN in float16, bfloat16, float32 and float64
POISON_MAX_BLOCKS = 64
M_PERTURB = -6  # glibc's mallopt parameter: fill each block malloc hands out with the complement of its byte
PERTURB_BYTE = 0x01  # so 0xFE: -1.7e38 in float32 (0 would turn it off)


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when the judge dies, so no worker outlives its judge."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


# set at import: frames in this file are the ones worth naming
CANDIDATE_PATH: dict[str, Optional[str]] = {"path": None}


def describe(exc: BaseException) -> str:
    """One line naming the exception, the candidate's line that raised it (if any), and the message."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == CANDIDATE_PATH["path"]]
    where = f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}{where}: {exc}"


def instrument_builds() -> None:
    """Wrap torch's extension builders, so that build time and build failures are known wherever a
    candidate builds (at import or in __init__). Done before the candidate is imported."""
    import functools

    import torch.utils.cpp_extension as ext

    def timed(builder):
        @functools.wraps(builder)
        def wrapper(*args, **kwargs):
            start = timing.now_ns()
            try:
                return builder(*args, **kwargs)
            except BaseException as exc:
                BUILDS["error"] = describe(exc)
                raise
            finally:
                BUILDS["seconds"] += (timing.now_ns() - start) / 1e9
        return wrapper

    for name in ("load_inline", "load"):
        setattr(ext, name, timed(getattr(ext, name)))


def storages_of(tensors: list) -> set:
    """Where the storages of these tensors (others ignored) begin."""
    return {x.untyped_storage().data_ptr() for x in tensors if isinstance(x, torch.Tensor)}


def shares_an_input(out, inputs: list) -> bool:
    """Is a tensor of this output (a tensor, or a tuple or list of them) an input's storage?"""
    items = out if type(out) in (tuple, list) else [out]
    return bool(storages_of([x for x in items if type(x) is torch.Tensor]) & storages_of(inputs))


def package(out, inputs: list, copies: bool = False) -> dict:
    """Outputs as plain tensors plus the names of anything that is not exactly a torch.Tensor.

    An output that shares storage with an input is sent as a copy (CUDA IPC cannot re-send memory it
    received) and reported, so the judge can flag it; `copies`: every tensor sent as a copy.
    """
    input_storages = storages_of(inputs)
    aliased = []

    def item(x):
        if type(x) is not torch.Tensor:
            return {"not_tensor": type(x).__qualname__}
        if x.untyped_storage().data_ptr() in input_storages:
            aliased.append(True)
            return handover.copy(x)
        return handover.copy(x) if copies else x.detach()

    reply: dict[str, object]
    if isinstance(out, torch.Tensor):  # a subclass too: item() names it
        reply = {"kind": "tensor", "items": [item(out)]}
    elif type(out) in (tuple, list):
        reply = {"kind": type(out).__name__, "items": [item(x) for x in out]}
    else:
        reply = {"kind": "other", "type": type(out).__qualname__, "items": []}
    reply["aliases_input"] = bool(aliased)
    return reply


class Worker:
    """Request handlers; each returns a reply: channel.ok(payload) or channel.failed(status, message)."""

    def __init__(self, device: str, cold_cache: bool):
        self.device = torch_device(device)
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        self.timer = timing.Timer(self.device, cold_cache)
        self.module: Optional[types.ModuleType] = None
        self.model: Any = None  # the candidate's (or the reference's) model: whatever its class made
        self.class_name = "ModelNew"
        self.build_lock = None
        self.held: list = []  # outputs the judge may still be reading
        self.timing_inputs: list = []
        self.moving_inputs: Optional[MovingCopies] = None
        self.outputs = EarlierOutputs()
        self.pad: Optional[torch.Tensor] = None  # a confirmation block's placement pad (op_replace)
        # a stateful problem's state before its first call; at timing
        self.first_state: Optional[dict] = None
        self.timing_state: Optional[dict] = None
        self.own_ooms = 0  # out-of-memory errors of the harness's own in this process (poisoning), not the candidate's

    def settle(self) -> None:
        """Wait for this process's GPU work, the driver's part of closing mappings included, before replying."""
        self.timer.sync()

    def op_import(self, path: str, source: str, module_name: str, overrides: dict, class_name: str = "ModelNew",
                  problem: list | None = None):
        """Import the candidate (load_inline builds run here); class_name is the class to build; `problem` (its source
        and path) runs first in the candidate's namespace, as KernelBench's eval runs both files
        (harness.common.load)."""
        CANDIDATE_PATH["path"] = str(path)
        self.class_name = class_name
        self.build_lock = lock_build_dir()  # held until ModelNew is built (builds may happen in __init__)
        try:
            self.module = load_module(source, path, module_name, overrides, tuple(problem) if problem else None)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt from candidate code too
            return channel.failed("compile_error", describe(exc))
        if not isinstance(getattr(self.module, class_name, None), type):
            return channel.failed("compile_error", f"the candidate defines no class {class_name}")
        return channel.ok({"build_s": BUILDS["seconds"]})

    def op_construct(self, init_args: list, init_seed: int, state_dict: dict | None = None, dtype: str | None = None,
                     mode: str = "constructed"):
        """Build the model as harness.common.semantics says (the problem's init inputs under the init seed, in `mode`,
        in
        `dtype` when the run asks for one: --precision); with `state_dict`, its weights are copied in where they match
        (the reference's worker always; the candidate's only on a second attempt: op_adopt_weights)."""
        try:
            model = semantics.build_model(getattr(self.module, self.class_name), init_args, init_seed, self.device,
                                          mode, getattr(torch, dtype) if dtype in ("float16", "bfloat16") else None)
            copied = copy_matching(model, state_dict)[0] if state_dict and isinstance(model, torch.nn.Module) else 0
        except BaseException as exc:
            if BUILDS["error"]:  # an extension built in __init__ failed: a compile error, not a runtime one
                return channel.failed("compile_error",
                                      f"extension build in {self.class_name}(...) failed: " + BUILDS["error"])
            return channel.failed("runtime_error", f"{self.class_name}(...) raised " + describe(exc))
        finally:
            release_build_dir(self)
        self.model = model
        return channel.ok({"copied_tensors": copied, "build_s": BUILDS["seconds"]})

    def op_adopt_weights(self, state_dict: dict):
        """The reference's weights copied over the model's own same-named, same-shaped ones: the second attempt for a
        candidate whose __init__ drew its parameters in another order. Reports how many entries it changed."""
        if not isinstance(self.model, torch.nn.Module):
            return channel.ok({"copied_tensors": 0, "changed_tensors": 0})
        copied, changed = copy_matching(self.model, state_dict)
        return channel.ok({"copied_tensors": copied, "changed_tensors": changed})

    def op_run(self, inputs: list, poison_sizes: list, seed: int | None = None, keep_state: bool = False):
        """One forward call on fresh inputs, with freed memory poisoned first and the RNG seeded as the reference's
        call was (harness.common.semantics.call). keep_state (a stateful problem): the model's state is kept before its
        first
        such call, for op_restore_state."""
        self.held = []
        if keep_state and self.first_state is None:
            self.first_state = semantics.model_state(self.model)
        self.own_ooms += poison_free_memory(self.device, poison_sizes)
        try:
            with heap_filled(self.device):
                out = semantics.call(self.model, inputs, seed)
            self.timer.sync()
        except BaseException as exc:
            return channel.failed("runtime_error", "forward raised " + describe(exc))
        reply = package(out, inputs)
        reply["reused_storage"] = self.outputs.returned_before(out)
        self.outputs.remember(out)
        self.held = [out, inputs]
        return channel.ok(reply)

    def op_restore_state(self):
        """A stateful problem: the model's state as before its first call again (the nondeterminism check's second
        call, a second attempt), as the judge restores the reference's."""
        if self.first_state is not None:
            semantics.restore_state(self.model, self.first_state)
        return channel.ok({})

    def op_release_outputs(self):
        """Let go of the last call's outputs and inputs: the judge has checked them (each is mapped by the judge,
        whose memory the inputs are); and hand the cached blocks back where the GPU has less free than they hold: an
        honest candidate's cached temporaries and workspaces would otherwise leave the judge's next trial short on a
        small GPU. (Not always: each hand-back makes the next call's multi-GB output a fresh allocation.)"""
        self.held = []
        self.timer.sync()
        if self.device.type == "cuda":
            torch.cuda.ipc_collect()
            cached = torch.cuda.memory_reserved(self.device) - torch.cuda.memory_allocated(self.device)
            if torch.cuda.mem_get_info(self.device)[0] < cached:
                torch.cuda.empty_cache()
        return channel.ok({})

    def op_set_timing_inputs(self, inputs: list, stateful: bool = False):
        """Keep private copies of the inputs that timed calls use; for a stateful problem, the model's state now (after
        the correctness trials), which every timed call starts from (the judge checks timed outputs from its own).

        Copies, because shared memory is not ordinary memory on the CPU (a tmpfs mapping, without huge
        pages): the reference reads private memory in the judge, so the candidate does the same here.
        """
        self.held = []
        if self.device.type == "cuda":  # correctness's cached blocks back first: the timing inputs are the harness's
            # share of this process, the rest is the candidate's own (harness/judge/footprint.py)
            torch.cuda.ipc_collect()
            torch.cuda.empty_cache()
        self.moving_inputs = MovingCopies(inputs)  # private
        self.timing_inputs = self.moving_inputs.tensors
        if stateful:
            state = self.timing_state = semantics.model_state(self.model, on_cpu=False)
            self.timer.before_call = lambda: semantics.restore_state(self.model, state)
        return channel.ok({})

    def op_refresh_timing_inputs(self, inputs: list):
        """New contents for the timing inputs, each moved within its buffer first (MovingCopies), but in place while
        a captured graph times them (it keeps their addresses)."""
        assert self.moving_inputs is not None  # set_timing_inputs comes first
        self.timing_inputs = self.moving_inputs.refill(inputs, move=self.timer.method != "cuda_graph")
        self.timer.sync()
        return channel.ok({})

    def op_release_memory(self, workspaces: bool = False):
        """Hand this process's cached GPU blocks back (the judge asks when the GPU is full); workspaces: cuBLAS's too,
        which empty_cache leaves (before the other side's first call, which must find the room this one found)."""
        self.timer.sync()
        if self.device.type == "cuda":
            torch.cuda.ipc_collect()  # outputs we sent that the judge has let go of: only then can they be freed
            if workspaces and hasattr(torch._C, "_cuda_clearCublasWorkspaces"):
                torch._C._cuda_clearCublasWorkspaces()
            torch.cuda.empty_cache()
        return channel.ok({})

    def op_replace(self, pad_bytes: int):
        """A round of a confirmation block (harness.runner.blocks), or of a graph-timed pair
        (judge_timing.replaces_every_round): this process's cached blocks handed back and a pad of the judge's (secret)
        size held, then the cache flush's buffer and one untimed call, so that the buffer and the call's output,
        workspace and temporaries land elsewhere than last round (a cuDNN kernel ran 6% slower in some places than in
        others on the H200, a 2 us ReLU 14-17%: docs/decisions/process-offset.md). A captured graph, whose pool holds
        its call's memory, is captured again, its inputs moved first (other calls' inputs move every round:
        op_refresh_timing_inputs)."""
        if self.device.type != "cuda":
            return channel.ok({})
        graphed = self.timer.method == "cuda_graph"
        self.pad = self.timer.flush_buffer = None
        self.timer.let_go_of_output()
        if graphed:
            self.timer.graphs = self.timer.last_output = None
            self.move_graph_inputs()
        self.timer.sync()
        torch.cuda.ipc_collect()
        torch.cuda.empty_cache()
        try:
            free = torch.cuda.mem_get_info(self.device)[0]
            self.pad = torch.empty(min(int(pad_bytes), free // 4), dtype=torch.uint8, device=self.device)
        except (torch.cuda.OutOfMemoryError, ValueError, TypeError):
            self.pad = None  # the harness's own: a pad that does not fit is left out, never the candidate's failure
        self.beside_the_pad(self.timer.place_flush_buffer)
        try:
            self.beside_the_pad(self.timer.recapture if graphed else self.timer.once)
            self.timer.sync()
        except BaseException as exc:
            return channel.failed("runtime_error", "forward raised " + describe(exc))
        return channel.ok({})

    def move_graph_inputs(self) -> None:
        """The timing inputs, contents kept, at new offsets of their buffers (through copies: a move within a buffer
        may overlap), or where they are if the copies do not fit."""
        try:
            current = [x.clone() if isinstance(x, torch.Tensor) else x for x in self.timing_inputs]
        except torch.cuda.OutOfMemoryError:
            self.own_ooms += 1  # the harness's, not the candidate's (worker_ooms)
            return
        assert self.moving_inputs is not None  # set_timing_inputs comes first
        self.timing_inputs = self.moving_inputs.refill(current, move=True)

    def beside_the_pad(self, make: Callable[[], object]) -> None:
        """make() (an allocation of op_replace's: the flush buffer, the untimed call or a graph's capture) with the pad
        held; an out-of-memory with the pad held is the pad's doing, the harness's own, never the candidate's: once
        more without it."""
        try:
            make()
        except torch.cuda.OutOfMemoryError:
            if self.pad is None:
                raise
            self.own_ooms += 1
            self.pad = None
            torch.cuda.empty_cache()
            make()

    def op_last_timed_output(self, window: int = -1):
        """What the last timed call returned, for the judge to check; a graph's as calls window `window` of the last
        sample ended (Timer.snapshot_output), its values only: whether it is an input's storage is read on the
        output."""
        self.timer.sync()
        # Sent as copies where the output itself must stay: a graph's output lives in its private pool, rewritten by
        # replays; and sending a CPU tensor moves its storage into a shared-memory file, which the next timed call
        # unmapped inside its window as it let go of this output. Only the candidate's output is checked, so only its
        # side paid. (2-core CPU A/A pairs leaned below 1.0 before, 19 of 20 at 7710ba4, and 13 of 20 after, at
        # 704783a: the medians, 0.992 and 0.993, do not show that this was the lean's cause.) Whether the output is
        # an input's storage is read on the output itself, before any copy (copied first, a timed call that wrote
        # its result over its input was never seen to).
        copies = self.timer.method == "cuda_graph" or self.device.type != "cuda"
        snapshots = self.timer.snapshots if self.timer.method == "cuda_graph" else []
        if not snapshots:
            return channel.ok(package(self.timer.last_output, self.timing_inputs, copies))
        reply = package(snapshots[window % len(snapshots)], [], copies=True)
        reply["aliases_input"] = shares_an_input(self.timer.last_output, self.timing_inputs)
        return channel.ok(reply)

    def op_trace(self):
        """The torch operators and GPU kernels one call launches, by name. On a GPU, torch.profiler (kernels need
        CUPTI); on the CPU, the autograd profiler, which records the same aten operators without the seconds of
        imports (torch._dynamo) that torch.profiler's first use costs."""
        self.timer.let_go_of_output()  # (prepare's: the rounds make their own) held, the traced call's needs room twice
        try:
            if self.device.type == "cuda":
                from torch.profiler import ProfilerActivity, profile

                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    self.call_for_timing()
                    self.timer.sync()
                events = prof.events()
            else:
                with torch.autograd.profiler.profile() as prof:
                    self.call_for_timing()
                events = prof.function_events
        except BaseException as exc:
            return channel.failed("runtime_error", "forward raised " + describe(exc))
        ops, kernels = set(), set()
        for event in events:
            if str(event.device_type).endswith("CUDA"):
                kernels.add(event.name)
            elif event.name.startswith("aten::"):
                ops.add(event.name)
        return channel.ok({"ops": sorted(ops), "kernels": sorted(kernels)})

    def call_for_timing(self):
        with torch.no_grad():
            return self.model(*self.timing_inputs)

    def op_prepare_timing(self, warmup: int, allow_graph: bool = True, batched: bool = False, lead_us: float = 0.0,
                          batch: int | None = None, windows: int | None = None):
        """Warm up and choose the timing method (batched for short calls, or when told, `batch` calls a window if
        given; graphs unless told not to; `windows` single windows a sample if given); lead_us: the GPU spin before
        each window (timing.Timer.window)."""
        try:
            self.timer.lead_us = float(lead_us)
            # A stateful model's replays would not start from its state: no graph for it.
            method = self.timer.prepare(self.call_for_timing, warmup, allow_graph and self.timing_state is None,
                                        batched, batch, windows, inputs=self.timing_inputs)
            return channel.ok({"method": method, "batch": self.timer.batch})
        except BaseException as exc:
            return channel.failed("runtime_error", "forward raised " + describe(exc))

    def op_time(self):
        """One timing sample: [ms per call, host wall ms per call]."""
        try:
            return channel.ok(list(self.timer.sample()))
        except BaseException as exc:
            return channel.failed("runtime_error", "forward raised " + describe(exc))

    def op_exit(self):
        """Peak memory of this process and its allocations that found no GPU memory, then the loop ends."""
        ooms = timing.out_of_memory_count(self.device)
        return channel.ok({"peak_mem_mb": timing.peak_memory_mb(self.device),
                           "ooms": None if ooms is None else ooms - self.own_ooms})


def copy_matching(model: torch.nn.Module, reference: dict) -> tuple[int, int]:
    """Copy reference tensors into same-named, same-shaped entries of the model's state dict: (entries copied, entries
    whose values that changed)."""
    copied = changed = 0
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            ref = reference.get(name)
            same_kind = ref is not None and (ref.dtype == tensor.dtype or ref.is_floating_point()
                                             and tensor.is_floating_point())
            # (float dtypes may differ under --precision)
            if ref is not None and same_kind and ref.shape == tensor.shape:
                changed += not torch.equal(tensor, ref.to(device=tensor.device, dtype=tensor.dtype))
                tensor.copy_(ref)
                copied += 1
    return copied, changed


class EarlierOutputs:
    """The storages of the last call's outputs, weakly held: an output whose storage is one of them, still alive, was
    returned before (a cached result), since memory in use is never handed out twice."""

    def __init__(self):
        self.storages = []  # (data pointer, StorageWeakRef)

    def returned_before(self, out) -> bool:
        return any(not ref.expired() and ptr == x.untyped_storage().data_ptr()
                   for x in timing.output_tensors(out) for ptr, ref in self.storages)

    def remember(self, out) -> None:
        self.storages = [(x.untyped_storage().data_ptr(),
                          StorageWeakRef(x.untyped_storage())) for x in timing.output_tensors(out)]


def poison_free_memory(device: torch.device, sizes: list) -> int:
    """Fill the free blocks the allocator would hand out for outputs of these sizes with NaN bytes; returns the
    out-of-memory errors that this caused (ours, not the candidate's: worker_ooms leaves them out).

    On a GPU every cached free block that can serve a size is taken (the caching allocator is where stale results
    live), then at most one new block: the cached free bytes can reach a size in all while no one block can serve it
    (pieces, blocks of other streams or private pools), and each allocation is then a new segment (61 of 297 MB, 16.9
    GiB, for KernelBench's 50_conv_standard_2D: issue 37). A new block is kept, poisoned, where nothing cached could
    serve the size (the output will take a new block: this one); after cached blocks were poisoned it is surplus,
    handed back at the end, else the cache would grow by one output a call. So poisoning grows this process's cache by
    at most one block an output, one the output then takes. Largest size first, every block held until the end: a
    smaller size's blocks split off the front of a larger output's block would leave that block's tail stale.
    """
    ooms_before = timing.out_of_memory_count(device)
    cuda = device.type == "cuda"
    if cuda:  # blocks freed while a stream still used them are free to hand out only once its work is done
        torch.cuda.synchronize(device)
    held, surplus = [], []  # on a GPU every size's blocks, let go together at the end
    for nbytes in sorted(sizes, reverse=True):
        try:
            # blocks taken for this size, this one included
            for taken in range(1, (POISON_MAX_BLOCKS if cuda else 4) + 1):
                if cuda and cached_free_bytes(device) < nbytes:
                    break  # no cached block this large is left: every one that could serve it is poisoned
                reserved = torch.cuda.memory_reserved(device) if cuda else 0
                held.append(torch.empty(nbytes, dtype=torch.uint8, device=device).fill_(POISON_BYTE))
                if cuda and torch.cuda.memory_reserved(device) > reserved:  # a new segment: none cached could serve it
                    if taken > 1:  # the output lands on a poisoned cached block: this new one is surplus
                        surplus.append(held.pop())
                    break
        except RuntimeError:  # out of memory: what was filled is poisoned, the rest cannot be reused anyway
            pass
        if not cuda:
            held.clear()
    if surplus:  # its segments back while every poisoned block is held: emptying the cache frees none of them
        surplus.clear()
        torch.cuda.empty_cache()
    del held
    if cuda:
        torch.cuda.synchronize(device)
    ooms_after = timing.out_of_memory_count(device)
    return ooms_after - ooms_before if ooms_before is not None and ooms_after is not None else 0


@contextlib.contextmanager
def heap_filled(device: torch.device):
    """On the CPU with glibc, every block malloc hands out inside is filled first (M_PERTURB): a result freed earlier
    cannot come back as a stale output where poison_free_memory's blocks missed it, as they did in 114 of 2,000 heap
    states of a loop like tests/test_worker.py's (where malloc places a block moves with the heap's state). Not
    blocks of under ~1 KiB that glibc's per-thread cache serves; not on a GPU, where poison_free_memory takes every
    cached block."""
    if device.type != "cpu" or not glibc():
        yield
        return
    mallopt = ctypes.CDLL(None).mallopt
    mallopt(M_PERTURB, PERTURB_BYTE)
    try:
        yield
    finally:
        mallopt(M_PERTURB, 0)


def glibc() -> bool:
    """Is this process's C library glibc (whose mallopt knows M_PERTURB)?"""
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):  # a platform without the name
        return False


def lock_build_dir():
    """Take this candidate's build folder for ourselves (flock, which dies with its holder), then clear the
    lock files torch's own builder leaves when a build is killed (a timeout): otherwise every later build
    of the same source would wait on them for ever. Several processes may build one source at once."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if not root:
        return None
    os.makedirs(root, exist_ok=True)
    fd = os.open(os.path.join(root, ".harness-build.lock"), os.O_CREAT | os.O_RDWR, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    for name in os.listdir(root):
        stale = os.path.join(root, name, "lock")
        if os.path.isfile(stale):
            os.unlink(stale)  # its builder is gone: every builder of this folder holds our flock
    return fd


def release_build_dir(worker) -> None:
    if getattr(worker, "build_lock", None) is not None:
        os.close(worker.build_lock)
        worker.build_lock = None


def cached_free_bytes(device: torch.device) -> int:
    """Memory the caching allocator holds but has not handed out."""
    return torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)


def serve(conn, worker: Worker) -> None:
    """Answer requests until the judge says exit or goes away."""
    while True:
        try:
            op, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = getattr(worker, "op_" + op)(**args)
        except BaseException as exc:
            reply = channel.failed("runtime_error", describe(exc))
        # (a failed one is sent as it is: a broken CUDA context aborts when it frees what it was sent)
        if reply[0] == "ok":
            try:
                worker.settle()  # an error the request left queued on the GPU is the request's
                # Let go of what the judge sent (the CUDA IPC mappings of its tensors) inside this request. Released at
                # the next request instead, the mappings of the 6.4 GB round inputs were closed at the start of a timing
                # request, and the first window of each round on the H100 took ~5.0 ms, not ~4.3
                # (bench/bimodal_timing.py).
                del args
                worker.settle()
            except BaseException as exc:
                reply = channel.failed("runtime_error", "the GPU failed after the request: " + describe(exc))
        conn.send(reply)
        if op == "exit":
            return


def warm_up(device: str) -> None:
    """Start CUDA and the profiler on the run's GPU before the pair arrives: both take seconds to start."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.set_device(device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        torch.ones(1, device=device).add_(1)
        torch.cuda.synchronize(device)


def main() -> None:
    """A worker's life: forked by its judge (sandbox.become_worker), or `python -m harness.worker.worker`; the judge
    sets
    the environment (its channel's address and key)."""
    die_with_parent()
    instrument_builds()
    conn = channel.connect(os.environ["HARNESS_SOCKET"], bytes.fromhex(os.environ.pop("HARNESS_AUTHKEY")))
    greeting = conn.recv()
    if greeting[0] == "warm_up":  # started ahead of its pair: the judge says when (no pair is timed then)
        try:
            warm_up(greeting[1])
        except Exception:  # only time is at stake: the pair will start them itself
            pass
        conn.send(channel.ok())
        greeting = conn.recv()
    device, cold, env = greeting
    os.environ.update({str(k): str(v) for k, v in env.items()})  # where to build: read by torch at build time
    serve(conn, Worker(device, cold))
    conn.close()
    os._exit(0)  # skip atexit handlers a candidate may have registered


if __name__ == "__main__":
    main()
