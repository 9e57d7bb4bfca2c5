"""Start, talk to and stop one worker process: own session, bounded output, timeouts, group kill. Forked from a judge
that imported torch but touched no device, a worker skips its own torch import."""
from __future__ import annotations

import gc
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from pathlib import Path
from multiprocessing.connection import Connection
from typing import Callable, Optional

from harness.common import channel, confine, handover, procs
from harness.common.devices import torch_device
from harness.common.extensions import BUILDING
from harness.common.procs import make_undumpable
from harness.common.verdict import Status

ROOT = Path(__file__).resolve().parents[2]
STALL_S = 30  # a message stalled this long ends the pair
KILL_WAIT_S = 30  # after SIGKILL, one stuck in a driver call is left behind


class WorkerFailure(Exception):
    """The worker timed out, died or sent an unreadable reply; `status` says which."""

    def __init__(self, status: Status, message: str):
        super().__init__(message)
        self.status = status


class BoundedLog:
    """The first and last `limit/2` bytes of a stream, and a count of the rest."""

    def __init__(self, limit: int):
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self.half - len(self.head)
        self.head += chunk[:room]
        self.tail += chunk[max(room, 0):]
        if len(self.tail) > self.half:
            self.dropped += len(self.tail) - self.half
            del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        middle = f"\n[... {self.dropped} bytes of output dropped ...]\n" if self.dropped else ""
        return (bytes(self.head).decode(errors="replace") + middle + bytes(self.tail).decode(errors="replace"))


class Sandbox:
    """One worker process and its channel, started before its pair is known; `greet` tells it its device.

    Between requests its every process (and `strays`) is stopped; `confined` (the candidate's): common.confine."""

    def __init__(self, env_extra: dict, output_limit: int, kill_grace_s: float, confined: bool = True):
        self.tmp = tempfile.TemporaryDirectory(prefix="harness-worker-")
        address = os.path.join(self.tmp.name, "channel.sock")
        authkey = secrets.token_bytes(32)
        self.listener = channel.listen(address, authkey)
        env = {**os.environ, **env_extra, "HARNESS_SOCKET": address, "HARNESS_AUTHKEY": authkey.hex(),
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        self.proc = ForkedWorker(env, self.tmp.name, confined)
        self.log = BoundedLog(output_limit)
        self.drainer = threading.Thread(target=self._drain, daemon=True)
        self.drainer.start()
        self.kill_grace_s = kill_grace_s
        self.conn: Optional[Connection] = None
        self.outbox: Optional[handover.Outbox] = None  # made by greet
        self.awaiting: Optional[str] = None  # the request whose reply is unread
        self.strays: Callable[[], list[int]] = lambda: []  # adopted orphans of this side
        self.paused: set[int] = set()
        self.sent_ns = 0
        self.last_request_ms = 0.0  # the last request's round trip

    def connect(self, timeout: float) -> None:
        """Wait for the worker to connect (once)."""
        if self.conn is None:
            self.conn = self._accept(self.listener, timeout)
            self.listener.close()
            channel.bound_stalls(self.conn, STALL_S)

    def connected(self) -> Connection:
        """The channel to the worker, once it has connected."""
        if self.conn is None:
            raise RuntimeError("the worker has not connected yet")
        return self.conn

    def start_warm_up(self, device: str, timeout: float = 120) -> None:
        """Before the pair: have the worker start CUDA and the profiler."""
        self.connect(timeout)
        self.send_message(("warm_up", device))

    def finish_warm_up(self, timeout: float = 120) -> None:
        """Wait for the warm-up's end (whatever the reply)."""
        conn = self.connected()
        if conn.poll(timeout):
            channel.recv_restricted(conn)

    def greet(self, device: str, cold_cache: bool, env: dict, timeout: float = 120) -> None:
        """Connect, then send the worker its device, cache setting and build environment."""
        self.outbox = handover.Outbox(torch_device(device))  # only what this worker may see
        self.connect(timeout)
        self.send_message((device, cold_cache, env))
        self.pause()

    def pause(self) -> None:
        """Stop this side's processes until the next request."""
        if self.conn is None or self.proc.poll() is not None:
            return
        try:
            self.paused |= procs.stop_all([self.proc.pid, *self.strays()])
        except TimeoutError as exc:
            self.stop()
            raise WorkerFailure(Status.CRASH, f"the worker's processes could not be paused: {exc}") from None

    def resume(self) -> None:
        """Let this side's processes run again."""
        procs.continue_all(self.paused)
        self.paused = set()

    def _drain(self) -> None:
        for chunk in iter(lambda: self.proc.stdout.read1(65536), b""):
            self.log.feed(chunk)

    def _accept(self, listener, timeout: float):
        """Accept the worker's connection, unless it dies first."""
        result: dict = {}
        thread = threading.Thread(target=lambda: result.setdefault("conn", listener.accept()), daemon=True)
        thread.start()
        deadline = time.monotonic() + timeout
        while thread.is_alive() and time.monotonic() < deadline and self.proc.poll() is None:
            thread.join(0.05)
        if "conn" not in result:
            how = self.exit_description()
            self.stop()
            raise WorkerFailure(Status.CRASH, f"worker did not start ({how}): {self.log_tail()}")
        return result["conn"]

    def request(self, op: str, timeout: float, build_grace: float = 0.0, **args) -> channel.Reply:
        """Send one request and wait for its reply (WorkerFailure)."""
        self.send(op, **args)
        return self.receive(op, timeout, build_grace)

    def send(self, op: str, **args) -> None:
        """Send a request without waiting; `receive` gets its reply."""
        self.resume()
        self.sent_ns = time.perf_counter_ns()
        self.send_message((op, args))
        self.awaiting = op

    def send_message(self, message) -> None:
        try:
            self.connected().send(message)
        except BlockingIOError:  # the worker stopped reading for STALL_S
            self.stop()
            raise WorkerFailure(Status.TIMEOUT,
                                f"the worker did not read its request for {STALL_S} s; worker stopped") from None
        except (OSError, EOFError):
            raise self._death() from None

    def receive(self, op: str, timeout: float, build_grace: float = 0.0) -> channel.Reply:
        """The reply to the request `op` sent last; up to `build_grace` more seconds while the worker builds an
        extension (a candidate that builds in its first forward call)."""
        self.awaiting = None
        deadline = time.monotonic() + timeout
        building = os.path.join(self.tmp.name, BUILDING)
        grace, last = build_grace, time.monotonic()
        conn = self.connected()
        while not conn.poll(0.05):
            if self.proc.poll() is not None and not conn.poll(0.2):
                raise self._death()
            now = time.monotonic()
            if grace > 0 and os.path.exists(building):  # the time a build takes moves the deadline
                step = min(now - last, grace)
                deadline, grace = deadline + step, grace - step
            last = now
            if now > deadline:
                self.stop()
                extra = f" (and {build_grace - grace:.0f} s of an extension build)" if grace < build_grace else ""
                raise WorkerFailure(Status.TIMEOUT, f"no reply to '{op}' within {timeout:g} s{extra}; worker stopped")
        reply = self._read_reply(op)
        self.last_request_ms = (time.perf_counter_ns() - self.sent_ns) / 1e6
        self.pause()
        return reply

    def _read_reply(self, op: str) -> channel.Reply:
        """The reply on the channel, or WorkerFailure."""
        try:
            return channel.parse_reply(channel.recv_restricted(self.connected()))
        except channel.MalformedReply as exc:
            self.stop()
            raise WorkerFailure(Status.CRASH, str(exc)) from None
        except BlockingIOError:  # a reply begun, then nothing for STALL_S
            self.stop()
            raise WorkerFailure(Status.CRASH,
                                f"the reply to '{op}' stalled mid-message for {STALL_S} s; worker stopped") from None
        except channel.OversizedReply as exc:
            self.stop()
            raise WorkerFailure(Status.CRASH, f"the reply to '{op}' is too large ({exc}); worker stopped") from None
        except (EOFError, ConnectionResetError, OSError):
            raise self._death() from None
        except channel.UnsafeReply as exc:
            self.stop()
            raise WorkerFailure(Status.INCORRECT, f"the worker's reply is not plain tensors ({exc})") from None
        except Exception as exc:  # a broken worker, never a success
            self.stop()
            raise WorkerFailure(Status.CRASH, f"unreadable reply to '{op}': {type(exc).__name__}: {exc}") from None

    def _death(self) -> WorkerFailure:
        try:
            self.proc.wait(2)  # report its own exit status
        except subprocess.TimeoutExpired:
            pass
        how = self.exit_description()
        self.stop()
        return WorkerFailure(Status.CRASH, f"worker died ({how}); output tail: {self.log_tail()}")

    def exit_description(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "still running"
        if code < 0:
            return f"killed by {signal.Signals(-code).name}"
        return f"exit code {code}"

    def log_tail(self, chars: int = 300) -> str:
        return " ".join(self.log.text()[-chars:].split()) or "(no output)"

    def stop(self) -> None:
        """SIGTERM the worker's process group, then SIGKILL."""
        if self.proc.poll() is None:
            signal_group(self.proc.pid, signal.SIGTERM)
            self.resume()  # a stopped process cannot act on SIGTERM
            signal_group(self.proc.pid, signal.SIGCONT)
            try:
                self.proc.wait(self.kill_grace_s)
            except subprocess.TimeoutExpired:
                pass
        signal_group(self.proc.pid, signal.SIGKILL)  # children left in the group go too
        try:
            self.proc.wait(KILL_WAIT_S)
        except subprocess.TimeoutExpired:  # stuck in the kernel: the pair ends all the same
            pass
        self.drainer.join(2)

    def close(self, timeout: float = 10) -> Optional[dict]:
        """Ask the worker to exit (its peak memory), then make sure it is gone."""
        info = None
        if self.conn is not None and not self.awaiting and self.proc.poll() is None:  # greeted and idle
            try:
                reply = self.request("exit", timeout)
                info = reply.payload if isinstance(reply, channel.Ok) else None
            except WorkerFailure:
                pass
        self.stop()
        self.listener.close()
        if self.conn is not None:
            self.conn.close()
        self.tmp.cleanup()
        return info


class ForkedWorker:
    """A worker forked from here, with Popen's interface as a Sandbox uses it.

    Fork before CUDA or OpenMP threads start and before anything secret is read: the child copies it."""

    def __init__(self, env: dict, cwd: str, confined: bool = True):
        read_end, write_end = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()  # nothing we buffered is written again by the child
        with warnings.catch_warnings():  # 3.12+ warns of BLAS threads
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            become_worker(env, cwd, write_end, confined)
        os.close(write_end)  # the child holds the only write end: its death is our EOF
        self.pid = pid
        self.returncode: Optional[int] = None
        self.stdout = os.fdopen(read_end, "rb")

    def poll(self) -> Optional[int]:
        """The exit code (negative: a signal), or None."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere
                pid, status = self.pid, 255 << 8
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float) -> Optional[int]:
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("harness.worker.worker", timeout)
            time.sleep(0.01)
        return self.returncode


def become_worker(env: dict, cwd: str, out_fd: int, confined: bool = True) -> None:
    """In the child: set up as a fresh `python -m harness.worker.worker` would be, then its loop. Never returns."""
    code = 1
    try:
        gc.freeze()  # a finalizer of the judge's objects could delete its files
        os.setsid()
        if confined:  # while this process has one thread: the filter must cover every thread it will have
            confine.confine()  # refusals: environment.isolation
        os.chdir(cwd)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        for fd in map(int, os.listdir("/proc/self/fd")):
            if fd > 2 and fd != null and is_open(fd):
                os.dup2(null, fd)  # not closed: a Python object of ours that closes it later closes /dev/null
        os.environ.clear()
        os.environ.update(env)
        make_undumpable(dumpable=confined)  # the candidate's as exec would reset it; the reference's stays closed
        from harness.worker import worker

        worker.main()
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def signal_group(pid: int, sig: int) -> None:
    """Signal a process group, unless it is gone."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
