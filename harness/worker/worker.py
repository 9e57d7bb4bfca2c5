"""The candidate's (or the reference's) process: imports, runs and times it; trusted for nothing."""
from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import os
import re
import shutil
import signal
import traceback
import types
from typing import Any, Callable, Optional

from harness.worker import timing
from harness.common import channel, check, handover, methods, semantics
from harness.common.devices import torch_device
from harness.common.extensions import BUILD_FAILURE, BUILD_STAGE, BUILDING, CUDA_ASKED, FAILED_BUILDS, SOURCE_ERROR
from harness.common.inputs import MovingCopies
from harness.common.load import load_module

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.overrides import TorchFunctionMode

BUILDS: dict[str, Any] = {"seconds": 0.0, "error": None}  # time in, and the last failure of, extension builds
POISON_BYTE = 0xFF  # all-ones is NaN in float16, bfloat16, float32 and float64
POISON_MAX_BLOCKS = 64
M_PERTURB = -6  # glibc mallopt: fill malloc's blocks with ~byte
PERTURB_BYTE = 0x01  # so 0xFE: -1.7e38 in float32 (0 would turn it off)


def die_with_parent() -> None:
    """SIGKILL this process when the judge dies."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


CANDIDATE_PATH: dict[str, Optional[str]] = {"path": None}  # frames in this file are worth naming


def describe(exc: BaseException) -> str:
    """One line: the exception, the candidate's line that raised it (if any), the message."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == CANDIDATE_PATH["path"]]
    where = f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}{where}: {exc}"


def instrument_builds(marker: str) -> None:
    """Time torch's extension builds and record failures, and have `marker` exist while one runs (its judge may wait
    longer for a call that builds); done before the candidate's import."""
    import functools

    import torch.utils.cpp_extension as ext

    def timed(builder, inline: bool):
        @functools.wraps(builder)
        def wrapper(*args, **kwargs):
            start, record, locked = timing.now_ns(), None, False
            with contextlib.suppress(OSError):  # a mark never fails a build
                open(marker, "w").close()
            try:
                locked = lock_build_dir()  # a build in forward too holds the folder (import's lock is gone by then)
                record = failed_build_record(args, kwargs) if inline else None  # load(): sources in files
                known = read_failed_build(record)
                if known:  # a candidate that catches its build's failure would compile it again in each worker
                    name = kwargs.get("name", args[0] if args else "")
                    print(f"harness: load_inline {name!r} {KNOWN_FAILURE}", flush=True)
                    raise RuntimeError(f"{known} [harness: {KNOWN_FAILURE}]")
                return builder(*args, **kwargs)
            except BaseException as exc:
                BUILDS["error"] = describe(exc)
                keep_failed_build(record, exc)
                raise
            finally:
                BUILDS["seconds"] += (timing.now_ns() - start) / 1e9
                if locked:
                    release_build_dir()
                with contextlib.suppress(OSError):
                    os.unlink(marker)
        return wrapper

    for name in ("load_inline", "load"):
        setattr(ext, name, timed(getattr(ext, name), name == "load_inline"))


KNOWN_FAILURE = "not compiled again: the same call failed to compile in an earlier worker of this candidate"
TOOLCHAIN_ENV = ("CXX", "CC", "CUDA_HOME", "CUDA_PATH", "CPATH", "CPLUS_INCLUDE_PATH", "TORCH_CUDA_ARCH_LIST", "PATH")
INLINE_FILES = ("main.cpp", "cuda.cu")  # what load_inline writes the candidate's sources to
# A failure that another moment or machine may not have: a missing file (an include path), a full disk, no memory.
MACHINE_TROUBLE = re.compile(r"No such file or directory|No space left|error writing|Cannot allocate memory|Killed")


def failed_build_record(args: tuple, kwargs: dict) -> Optional[str]:
    """The file that keeps this load_inline call's compile error for the candidate's later workers (None: no folder)."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if not root:
        return None
    # The sources are arguments: the same call with the same compilers, the same build.
    call = repr((args, sorted(kwargs.items()), toolchain())).encode()
    return os.path.join(root, FAILED_BUILDS, hashlib.sha256(call).hexdigest()[:32])


def toolchain() -> tuple:
    """What else decides a build's outcome: the compilers (where, and when installed) and their settings."""
    from torch.utils.cpp_extension import CUDA_HOME

    settings = tuple((name, os.environ.get(name)) for name in TOOLCHAIN_ENV)
    compilers = [shutil.which(os.environ.get("CXX") or "c++"), CUDA_HOME and os.path.join(CUDA_HOME, "bin", "nvcc")]
    stamps = []
    for path in filter(None, compilers):
        with contextlib.suppress(OSError):
            stamps.append((path, os.stat(path).st_mtime_ns))
    return settings + tuple(stamps)


def read_failed_build(record: Optional[str]) -> Optional[str]:
    """The compile error kept for this call, if any."""
    if record is None:
        return None
    with contextlib.suppress(OSError), open(record) as kept:  # none kept: FileNotFoundError
        return kept.read()
    return None


def keep_failed_build(record: Optional[str], exc: BaseException) -> None:
    """Keep a build's failure for later workers when the compiler blamed the source (not a killed or missing tool)."""
    message = str(exc)
    blamed = SOURCE_ERROR.search(message)
    if (record is None or not isinstance(exc, RuntimeError) or KNOWN_FAILURE in message
            or not BUILD_FAILURE.search(message) or not blamed or not blamed.group(0).startswith(INLINE_FILES)
            or MACHINE_TROUBLE.search(message)):
        return
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(record), exist_ok=True)
        partial = f"{record}.{os.getpid()}.tmp"
        with open(partial, "w") as out:
            out.write(message[:100_000])
        os.replace(partial, record)


def watch_cuda_is_available(pretend: bool) -> None:
    """In a build-stage worker (no GPU visible): its log says when torch.cuda.is_available() is first asked; with
    `pretend` the answer is True, so a candidate that builds only when a GPU is there builds here, not in the GPU's time
    (real CUDA calls still fail). runner/builds decides what the answers mean."""
    answer = torch.cuda.is_available
    told: list[bool] = []

    def is_available() -> bool:
        if not told:
            told.append(True)
            print(CUDA_ASKED, flush=True)
        return True if pretend else answer()

    torch.cuda.is_available = is_available


def flush_offset(pad_bytes: int) -> int:
    """Where in its block the flush buffer starts this round: 0-4 MiB, in 4 KiB steps, from the secret pad's size."""
    return (int(pad_bytes) >> 8) % (4 << 20) // 4096 * 4096


def storages_of(tensors: list) -> set:
    """Where these tensors' storages begin."""
    return {x.untyped_storage().data_ptr() for x in tensors if isinstance(x, torch.Tensor)}


def shares_an_input(out, inputs: list) -> bool:
    """Is a tensor of this output an input's storage?"""
    items = out if type(out) in (tuple, list) else [out]
    return bool(storages_of([x for x in items if type(x) is torch.Tensor]) & storages_of(inputs))


def package(out, inputs: list, copies: bool = False) -> dict:
    """An output's reply: its tensors (copied if `copies`), others' names, aliasing."""
    input_storages = storages_of(inputs)
    aliased = []

    def item(x):
        if type(x) is not torch.Tensor:
            return {"not_tensor": type(x).__qualname__}
        if x.untyped_storage().data_ptr() in input_storages:
            aliased.append(True)
            return handover.copy(x)  # CUDA IPC cannot re-send memory it received
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
    """The request handlers (op_*), each returning channel.ok or channel.failed."""

    def __init__(self, device: str, cold_cache: bool):
        self.device = torch_device(device)
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        self.timer = timing.Timer(self.device, cold_cache)
        self.module: Optional[types.ModuleType] = None
        self.model: Any = None
        self.class_name = "ModelNew"
        self.held: list = []  # outputs the judge may still be reading
        self.timing_inputs: list = []
        self.moving_inputs: Optional[MovingCopies] = None
        self.outputs = EarlierOutputs()
        self.pad: Optional[torch.Tensor] = None  # op_replace's
        self.first_state: Optional[dict] = None
        self.timing_state: Optional[dict] = None
        self.own_ooms = 0  # the harness's own (poisoning), not the candidate's

    def settle(self) -> None:
        """Wait for this process's GPU work, closing mappings included."""
        self.timer.sync()

    def op_import(self, path: str, source: str, module_name: str, overrides: dict, class_name: str = "ModelNew",
                  problem: list | None = None):
        """Import the candidate (builds run here), `problem` first (harness.common.load)."""
        CANDIDATE_PATH["path"] = str(path)
        self.class_name = class_name
        lock_build_dir()  # held until ModelNew is built: __init__ may build
        try:
            self.module = load_module(source, path, module_name, overrides, tuple(problem) if problem else None)
        except BaseException as exc:  # SystemExit too
            return channel.failed("compile_error", describe(exc))
        if not isinstance(getattr(self.module, class_name, None), type):
            return channel.failed("compile_error", f"the candidate defines no class {class_name}")
        return channel.ok({"build_s": BUILDS["seconds"]})

    def op_construct(self, init_args: list, init_seed: int, state_dict: dict | None = None, dtype: str | None = None,
                     mode: str = "constructed"):
        """Build the model (harness.common.semantics), `state_dict`'s matches copied in."""
        try:
            model = semantics.build_model(getattr(self.module, self.class_name), init_args, init_seed, self.device,
                                          mode, getattr(torch, dtype) if dtype in ("float16", "bfloat16") else None)
            copied = copy_matching(model, state_dict)[0] if state_dict and isinstance(model, torch.nn.Module) else 0
        except BaseException as exc:
            if BUILDS["error"]:  # a build in __init__ failed: a compile error
                return channel.failed("compile_error",
                                      f"extension build in {self.class_name}(...) failed: " + BUILDS["error"])
            return channel.failed("runtime_error", f"{self.class_name}(...) raised " + describe(exc))
        finally:
            release_build_dir()
        self.model = model
        return channel.ok({"copied_tensors": copied, "build_s": BUILDS["seconds"]})

    def op_forward_on_meta(self):
        """In the build stage (no GPU): one call on meta tensors, for a build in forward; nothing else counts."""
        # tensors made without a device are meta too, and a meta tensor moved to a device stays on meta
        with contextlib.suppress(Exception), torch.device("meta"), StaysOnMeta():
            inputs = list(self.module.get_inputs())
            model = self.model.to("meta") if isinstance(self.model, torch.nn.Module) else self.model
            semantics.call(model, inputs)
        return channel.ok({"build_s": BUILDS["seconds"]})

    def op_adopt_weights(self, state_dict: dict):
        """The reference's matching weights copied in (a second attempt); counts changes."""
        if not isinstance(self.model, torch.nn.Module):
            return channel.ok({"copied_tensors": 0, "changed_tensors": 0})
        copied, changed = copy_matching(self.model, state_dict)
        return channel.ok({"copied_tensors": copied, "changed_tensors": changed})

    def op_run(self, inputs: list, poison_sizes: list, seed: int | None = None, keep_state: bool = False):
        """One seeded forward call, freed memory poisoned first; keep_state: for op_restore_state."""
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
        reply["build_s"] = BUILDS["seconds"]  # a build in forward counts in compile_s too
        self.outputs.remember(out)
        self.held = [out, inputs]
        return channel.ok(reply)

    def op_restore_state(self):
        """A stateful model's state before its first call, again."""
        if self.first_state is not None:
            semantics.restore_state(self.model, self.first_state)
        return channel.ok({})

    def op_release_outputs(self):
        """Let go of the last call's tensors, and of the cache where the GPU is short."""
        self.held = []
        self.timer.sync()
        if self.device.type == "cuda":
            torch.cuda.ipc_collect()
            cached = torch.cuda.memory_reserved(self.device) - torch.cuda.memory_allocated(self.device)
            if torch.cuda.mem_get_info(self.device)[0] < cached:  # each hand-back makes a new multi-GB allocation
                torch.cuda.empty_cache()
        return channel.ok({})

    def op_set_timing_inputs(self, inputs: list, stateful: bool = False):
        """Private copies of the timing inputs; a stateful model's state for timed calls."""
        self.held = []
        if self.device.type == "cuda":  # the inputs are the harness's share: judge/footprint.py
            torch.cuda.ipc_collect()
            torch.cuda.empty_cache()
        self.moving_inputs = MovingCopies(inputs)  # private: CPU shared memory is tmpfs, no huge pages
        self.timing_inputs = self.moving_inputs.tensors
        if stateful:
            state = self.timing_state = semantics.model_state(self.model, on_cpu=False)
            self.timer.before_call = lambda: semantics.restore_state(self.model, state)
        return channel.ok({})

    def op_refresh_timing_inputs(self, inputs: list):
        """New timing input contents, moved unless a graph holds their addresses."""
        assert self.moving_inputs is not None
        self.timing_inputs = self.moving_inputs.refill(inputs, move=not methods.is_graph(self.timer.method))
        self.timer.sync()
        return channel.ok({})

    def op_release_memory(self, workspaces: bool = False):
        """Hand the cache back; `workspaces`: cuBLAS's too, for the other side's first call."""
        self.timer.sync()
        if self.device.type == "cuda":
            torch.cuda.ipc_collect()  # what the judge let go of: only then freed
            if workspaces and hasattr(torch._C, "_cuda_clearCublasWorkspaces"):
                torch._C._cuda_clearCublasWorkspaces()
            torch.cuda.empty_cache()
        return channel.ok({})

    def op_replace(self, pad_bytes: int):
        """Re-place the timed memory behind a secret pad (docs/decisions/process-offset.md)."""
        if self.device.type != "cuda":
            return channel.ok({})
        graphed = methods.is_graph(self.timer.method)
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
            self.pad = None  # left out: a pad is never the candidate's failure
        self.beside_the_pad(lambda: self.timer.place_flush_buffer(flush_offset(pad_bytes)))
        try:
            self.beside_the_pad(lambda: self.timer.declared.re_placed(self.timer))
            self.timer.sync()
        except BaseException as exc:
            return channel.failed("runtime_error", "forward raised " + describe(exc))
        return channel.ok({})

    def move_graph_inputs(self) -> None:
        """The timing inputs, contents kept, moved in their buffers through copies (a move may overlap)."""
        try:
            current = [x.clone() if isinstance(x, torch.Tensor) else x for x in self.timing_inputs]
        except torch.cuda.OutOfMemoryError:
            self.own_ooms += 1
            return
        assert self.moving_inputs is not None
        self.timing_inputs = self.moving_inputs.refill(current, move=True)

    def beside_the_pad(self, make: Callable[[], object]) -> None:
        """make() with the pad held; an out-of-memory there is the pad's: again without it."""
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
        """The last timed output for the judge; a graph's as calls window `window` ended."""
        self.timer.sync()
        # why copies, and aliasing read first: docs/decisions/worker-output-lifetime.md
        copies = methods.is_graph(self.timer.method) or self.device.type != "cuda"
        snapshots = self.timer.snapshots if methods.is_graph(self.timer.method) else []
        if not snapshots:
            return channel.ok(package(self.timer.last_output, self.timing_inputs, copies))
        reply = package(snapshots[window % len(snapshots)], [], copies=True)
        reply["aliases_input"] = shares_an_input(self.timer.last_output, self.timing_inputs)
        return channel.ok(reply)

    def op_trace(self):
        """The aten operators and GPU kernels one call launches."""
        self.timer.let_go_of_output()  # room for the traced call's output
        try:
            if self.device.type == "cuda":
                from torch.profiler import ProfilerActivity, profile

                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    self.call_for_timing()
                    self.timer.sync()
                events = prof.events()
            else:
                with torch.autograd.profiler.profile() as prof:  # cheaper to start than torch.profiler
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
        """Warm up and pick the method (Timer.prepare); lead_us: Timer.lead_us."""
        try:
            self.timer.lead_us = float(lead_us)
            # a graph's replays would not restore a stateful model's state
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
        """Peak memory and OOM count; the loop then ends."""
        ooms = timing.out_of_memory_count(self.device)
        return channel.ok({"peak_mem_mb": timing.peak_memory_mb(self.device),
                           "ooms": None if ooms is None else ooms - self.own_ooms})


class StaysOnMeta(TorchFunctionMode):
    """A meta tensor moved to a device (.to, .cuda, .cpu) stays on meta: a forward that moves its inputs (to the GPU,
    which the build stage has not) before its build still reaches the build."""

    MOVES = frozenset({"to", "cuda", "cpu"})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        first = args[0] if args else None
        if getattr(func, "__name__", "") in self.MOVES and isinstance(first, torch.Tensor) and first.is_meta:
            if func.__name__ != "to":
                return first
            args = (first, *("meta" if isinstance(a, (str, torch.device)) else a for a in args[1:]))
            kwargs = {**kwargs, "device": "meta"} if "device" in kwargs else kwargs
        return func(*args, **kwargs)


def copy_matching(model: torch.nn.Module, reference: dict) -> tuple[int, int]:
    """Copy same-named, same-shaped reference tensors in: (copied, changed) counts."""
    copied = changed = 0
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            ref = reference.get(name)
            same_kind = ref is not None and (ref.dtype == tensor.dtype or ref.is_floating_point()
                                             and tensor.is_floating_point())  # float dtypes differ under --precision
            if ref is not None and same_kind and ref.shape == tensor.shape:
                changed += not torch.equal(tensor, ref.to(device=tensor.device, dtype=tensor.dtype))
                tensor.copy_(ref)
                copied += 1
    return copied, changed


class EarlierOutputs:
    """The last output's storages, weakly held: one alive and returned again is cached."""

    def __init__(self):
        self.storages = []  # (data pointer, StorageWeakRef)

    def returned_before(self, out) -> bool:
        return any(not ref.expired() and ptr == x.untyped_storage().data_ptr()
                   for x in check.output_tensors(out) for ptr, ref in self.storages)

    def remember(self, out) -> None:
        self.storages = [(x.untyped_storage().data_ptr(),
                          StorageWeakRef(x.untyped_storage())) for x in check.output_tensors(out)]


def poison_free_memory(device: torch.device, sizes: list) -> int:
    """Poison free blocks for these sizes; returns its OOMs (docs/decisions/worker-stale-memory.md)."""
    ooms_before = timing.out_of_memory_count(device)
    cuda = device.type == "cuda"
    if cuda:  # freed blocks are free once the stream's work is done
        torch.cuda.synchronize(device)
    held, surplus = [], []
    for nbytes in sorted(sizes, reverse=True):
        try:
            for taken in range(1, (POISON_MAX_BLOCKS if cuda else 4) + 1):
                if cuda and cached_free_bytes(device) < nbytes:
                    break  # all that could serve it are poisoned
                reserved = torch.cuda.memory_reserved(device) if cuda else 0
                held.append(torch.empty(nbytes, dtype=torch.uint8, device=device).fill_(POISON_BYTE))
                if cuda and torch.cuda.memory_reserved(device) > reserved:  # a new segment
                    if taken > 1:  # a poisoned cached block will serve: surplus
                        surplus.append(held.pop())
                    break
        except RuntimeError:  # out of memory: the rest cannot be reused
            pass
        if not cuda:
            held.clear()
    if surplus:  # freed now, while the poisoned blocks are held
        surplus.clear()
        torch.cuda.empty_cache()
    del held
    if cuda:
        torch.cuda.synchronize(device)
    ooms_after = timing.out_of_memory_count(device)
    return ooms_after - ooms_before if ooms_before is not None and ooms_after is not None else 0


@contextlib.contextmanager
def heap_filled(device: torch.device):
    """On the CPU with glibc, malloc's blocks filled (docs/decisions/worker-stale-memory.md)."""
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
    """Is the C library glibc (whose mallopt knows M_PERTURB)?"""
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):
        return False


BUILD_LOCK: dict[str, Optional[int]] = {"fd": None}  # the build folder's flock, while this worker holds it


def lock_build_dir() -> bool:
    """flock the build folder, unless held already (False then); clear killed builds' lock files (later builds would
    wait)."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if not root or BUILD_LOCK["fd"] is not None:
        return False
    os.makedirs(root, exist_ok=True)
    fd = os.open(os.path.join(root, ".harness-build.lock"), os.O_CREAT | os.O_RDWR, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    for name in os.listdir(root):
        stale = os.path.join(root, name, "lock")
        if os.path.isfile(stale):
            os.unlink(stale)  # every live builder holds our flock
    BUILD_LOCK["fd"] = fd
    return True


def release_build_dir() -> None:
    if BUILD_LOCK["fd"] is not None:
        os.close(BUILD_LOCK["fd"])
        BUILD_LOCK["fd"] = None


def cached_free_bytes(device: torch.device) -> int:
    """Cached memory not handed out."""
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
        if reply[0] == "ok":  # a failed one as is: a broken CUDA context aborts freeing what it was sent
            try:
                worker.settle()  # an error the request left queued on the GPU is the request's
                del args  # the judge's IPC mappings closed now: docs/decisions/worker-ipc-release.md
                worker.settle()
            except BaseException as exc:
                reply = channel.failed("runtime_error", "the GPU failed after the request: " + describe(exc))
        conn.send(reply)
        if op == "exit":
            return


def warm_up(device: str) -> None:
    """Start CUDA and the profiler before the pair arrives: both take seconds."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.set_device(device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        torch.ones(1, device=device).add_(1)
        torch.cuda.synchronize(device)


def main() -> None:
    """A worker's life: forked by its judge (sandbox.become_worker) or run as a module."""
    die_with_parent()
    socket = os.environ["HARNESS_SOCKET"]
    instrument_builds(os.path.join(os.path.dirname(socket), BUILDING))  # the folder its Sandbox made
    conn = channel.connect(socket, bytes.fromhex(os.environ.pop("HARNESS_AUTHKEY")))
    greeting = conn.recv()
    if greeting[0] == "warm_up":  # started ahead: the judge says when
        try:
            warm_up(greeting[1])
        except Exception:  # only time is at stake
            pass
        conn.send(channel.ok())
        greeting = conn.recv()
    device, cold, env = greeting
    os.environ.update({str(k): str(v) for k, v in env.items()})  # read by torch at build time
    stage = os.environ.pop(BUILD_STAGE, None)
    if stage and device == "cpu":
        watch_cuda_is_available(pretend=stage == "pretend")
    serve(conn, Worker(device, cold))
    conn.close()
    os._exit(0)  # skip atexit handlers a candidate may have registered


if __name__ == "__main__":
    main()
