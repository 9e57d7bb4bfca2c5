"""A process that imports the judge's modules once and forks a judge per pair; never starts CUDA, holds nothing of a
pair: docs/decisions/judge-factory.md. Socket protocol: b"fork" + fds (stdin, stdout, log) -> b"pid N";
b"kill N"; ends reported as b"exit N CODE" (Popen's sign). Process side: python -m harness.runner.factory FD"""
from __future__ import annotations

import os
import queue
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"  # torch.cuda.is_available() through NVML: CUDA stays unstarted


class FactoryGone(RuntimeError):
    """The factory process has ended or does not answer: judges are started the slow way."""


class ForkedJudge:
    """A judge forked by the factory, with the part of subprocess.Popen's interface a Judge uses."""

    def __init__(self, pid: int, factory: "JudgeFactory"):
        self.pid, self.factory = pid, factory
        self.stdin = self.stdout = None  # our ends of its pipes, given by JudgeFactory.fork
        self.returncode: Optional[int] = None
        self.ended = threading.Event()

    def poll(self):
        return self.returncode

    def wait(self, timeout: float | None = None) -> Optional[int]:
        if not self.ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"judge {self.pid}", timeout or 0.0)
        return self.returncode

    def kill(self) -> None:
        self.factory.kill(self)

    def end(self, code) -> None:
        self.returncode = code
        self.ended.set()


class JudgeFactory:
    """The runner's handle on a factory process: forks judges through it and learns how they ended."""

    def __init__(self, env: dict, cwd: Path, log_path: Path, start_timeout: float):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with open(log_path, "w") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "harness.runner.factory", str(theirs.fileno())],
                                         cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         pass_fds=(theirs.fileno(),))
        theirs.close()
        self.sock, self.start_timeout, self.log_path = ours, start_timeout, Path(log_path)
        self.lock = threading.Lock()  # one fork request at a time: answers come in order
        self.answers: queue.Queue = queue.Queue()
        self.judges: dict = {}  # pid: ForkedJudge, until it ends
        self.gone = False
        threading.Thread(target=self._read, daemon=True).start()

    def fork(self, log) -> ForkedJudge:
        """A new judge process, its stdin and stdout pipes ours, its stderr `log` (an open file)."""
        if self.gone:
            raise FactoryGone("the judge factory has ended")
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        try:
            with self.lock:
                try:
                    socket.send_fds(self.sock, [b"fork"], [stdin_r, stdout_w, log.fileno()])
                    # The first answer waits for the factory's imports (seconds): as long as a judge's start may take.
                    judge = self.answers.get(timeout=self.start_timeout)
                except (OSError, queue.Empty):
                    self.close()
                    raise FactoryGone("the judge factory did not answer") from None
                if judge is None:
                    raise FactoryGone("the judge factory has ended")
            judge.stdin, judge.stdout = os.fdopen(stdin_w, "w"), os.fdopen(stdout_r, "r")
            return judge
        except FactoryGone:
            os.close(stdin_w)
            os.close(stdout_r)
            raise
        finally:
            os.close(stdin_r)
            os.close(stdout_w)

    def kill(self, judge: ForkedJudge) -> None:
        """SIGKILL a judge through the factory, which knows whether that pid is still its unreaped child."""
        try:
            self.sock.send(b"kill %d" % judge.pid)
        except OSError:  # the factory is gone: its judges are init's children now, and the pid still theirs
            if judge.returncode is None:
                try:
                    os.kill(judge.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def close(self) -> None:
        """The factory exits (judges it forked run on to their ends)."""
        self.gone = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        if self.log_path.exists() and not self.log_path.stat().st_size:  # it had nothing to say
            self.log_path.unlink()

    def _read(self) -> None:
        while True:
            try:
                message = self.sock.recv(64)
            except OSError:
                message = b""
            if not message:
                break
            word, *numbers = message.split()
            if word == b"pid":
                judge = self.judges[int(numbers[0])] = ForkedJudge(int(numbers[0]), self)
                self.answers.put(judge)
            elif word == b"exit":
                judge = self.judges.pop(int(numbers[0]), None)
                if judge is not None:
                    judge.end(int(numbers[1]))
        self.gone = True
        self.answers.put(None)
        for judge in list(self.judges.values()):  # now init's children: we can only see when they are gone
            threading.Thread(target=watch_orphan, args=(judge,), daemon=True).start()


def watch_orphan(judge: ForkedJudge) -> None:
    """End a judge whose factory died once its process is gone (its exit code unknown: None)."""
    while True:
        try:
            os.kill(judge.pid, 0)
        except ProcessLookupError:
            judge.end(None)
            return
        time.sleep(0.1)


# -- the factory process ----------------------------------------------------------------------------------------

def main() -> None:
    """Import the judge's modules, ready the FLOP counter, then fork judges on request and report their ends."""
    from harness.common import stopping
    from harness.common.procs import make_undumpable

    make_undumpable()  # as the runner and the judges: a worker cannot reach our socket through /proc
    stopping.ignore_interrupts()  # a Ctrl-C is the runner's to act on (its judges inherit this)
    sock = socket.socket(fileno=int(sys.argv[1]))
    import torch
    from harness.judge import judge

    judge.ready_flop_counter()
    import_lazy_modules()
    if torch.cuda.is_initialized():  # a judge forked from here could never use the GPU
        raise RuntimeError("CUDA was started in the judge factory")
    wake_r, wake_w = os.pipe()  # SIGCHLD wakes the loop: judges are reaped the moment they end
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    children: set[int] = set()
    while True:
        readable = select.select([sock, wake_r], [], [])[0]
        if wake_r in readable:
            os.read(wake_r, 4096)
        reap(children, sock)
        if sock not in readable:
            continue
        message, fds, _, _ = socket.recv_fds(sock, 64, 3)
        if not message:  # the runner is done (or gone)
            return
        if message == b"fork" and len(fds) == 3:
            sys.stdout.flush()
            sys.stderr.flush()  # nothing buffered here is written again by the judge
            pid = os.fork()
            if pid == 0:
                become_judge(fds, (sock.fileno(), wake_r, wake_w))
            children.add(pid)
            sock.send(b"pid %d" % pid)
        elif message.startswith(b"kill ") and (pid := int(message.split()[1])) in children:
            os.kill(pid, signal.SIGKILL)
        for fd in fds:
            os.close(fd)


def import_lazy_modules() -> None:
    """What each judge or worker would import on its pair's path, imported once here: numpy.ma (numpy's median loads it
    on first use) and torch's extension builder, with setuptools under it (each worker's instrument_builds)."""
    import numpy.ma  # noqa: F401

    # Its import asks torch.cuda.is_available(): through NVML, which leaves CUDA unstarted, as a judge forked from here
    # needs it (torch's own advice for a process that forks).
    before = os.environ.get(NVML_CHECK)
    os.environ[NVML_CHECK] = "1"
    try:
        import torch.utils.cpp_extension  # noqa: F401
    finally:
        if before is None:
            del os.environ[NVML_CHECK]
        else:
            os.environ[NVML_CHECK] = before


def reap(children: set, sock: socket.socket) -> None:
    """Wait for every judge that has ended, and tell the runner how."""
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        try:
            sock.send(b"exit %d %d" % (pid, os.waitstatus_to_exitcode(status)))
        except OSError:
            pass


def become_judge(fds: list, ours: tuple) -> None:
    """In the forked child: the runner's pipes as stdin/stdout, the log as stderr, then judge.main(); never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in (*fds, *ours):
            os.close(fd)
        from harness.judge import judge

        judge.main()  # ends with os._exit
        code = 0
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


if __name__ == "__main__":
    main()
