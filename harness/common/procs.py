"""Process hygiene for the runner and judges: orphans, stopped trees, scheduling, timing CPUs. Imports nothing heavy."""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from harness.common import clocks


def make_undumpable(dumpable: bool = False) -> None:
    """prctl(PR_SET_DUMPABLE): a worker cannot read the run's secret from our /proc/<pid>/mem; True undoes it."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, int(dumpable), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux
        pass


def adopt_orphans() -> None:
    """prctl(PR_SET_CHILD_SUBREAPER): a dead worker's leftover processes become ours, for kill_orphans."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def my_children() -> dict[int, str]:
    """{pid: state} of this process's children, from /proc."""
    return {pid: state for pid, (parent, state) in processes().items() if parent == os.getpid()}


def processes() -> dict[int, tuple[int, str]]:
    """{pid: (parent pid, state)} of every process, from /proc/*/stat."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[int(stat.parent.name)] = (int(fields[1]), fields[0])
    return found


def kill_orphans(spare: frozenset = frozenset(), rounds: int = 5, wait_s: float = 10.0) -> int:
    """SIGKILL every child but `spare`; how many were alive. Reaping gives up after `wait_s` (a stuck driver call)."""
    killed, deadline = 0, time.monotonic() + wait_s
    for _ in range(rounds):
        children = {pid: state for pid, state in my_children().items() if pid not in spare}
        if not children:
            break
        for pid, state in children.items():
            try:
                if state != "Z":
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
            except ProcessLookupError:
                pass
        for pid in children:
            reap(pid, deadline)
    return killed


def reap(pid: int, deadline: float) -> None:
    """waitpid without blocking past `deadline`."""
    while True:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] or time.monotonic() > deadline:
                return
        except ChildProcessError:
            return
        time.sleep(0.01)


def task_files(pid: int, name: str) -> Optional[list[str]]:
    """/proc/<pid>/task/<tid>/<name> per thread ([] once gone; None where the kernel lacks the file)."""
    texts: list[str] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return texts
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/{name}") as f:
                texts.append(f.read())
        except FileNotFoundError:
            if os.path.isdir(f"/proc/{pid}/task/{tid}"):
                return None
        except OSError:
            pass
    return texts


def children(pid: int) -> list[int]:
    """The children of a process (every thread's), from /proc."""
    texts = task_files(pid, "children")
    if texts is None:
        return [child for child, (parent, _) in processes().items() if parent == pid]
    return [int(child) for text in texts for child in text.split()]


def tree(roots) -> list[int]:
    """These processes and all their live descendants."""
    seen, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.append(pid)
            todo += children(pid)
    return seen


def scheduling(pid: int) -> dict[int, tuple]:
    """{thread id: (nice, policy, CPUs allowed, cgroup)}: what a same-user process can change to slow it down."""
    states: dict = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:  # gone: its death is judged elsewhere
        return states
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            states[int(tid)] = (int(fields[16]), int(fields[38]), frozenset(os.sched_getaffinity(int(tid))),
                                task_cgroup(pid, tid))
        except (OSError, IndexError, ValueError):  # a thread that ended meanwhile
            pass
    return states


def task_cgroup(pid: int, tid) -> str:
    """A thread's cgroups ('' on a kernel without them)."""
    try:
        with open(f"/proc/{pid}/task/{tid}/cgroup") as f:
            return f.read()
    except FileNotFoundError:
        return ""


CGROUP_ROOT = "/sys/fs/cgroup"  # cgroup v2's mount (a hybrid machine's is /sys/fs/cgroup/unified)
# Limits a user may write in a delegated cgroup: a candidate could lower them for the other side's windows.
CGROUP_LIMITS = ("cpu.max", "cpu.weight", "cpu.idle", "cpu.uclamp.max", "cpuset.cpus", "memory.high", "memory.max",
                 "io.max")


def cgroup_limits(pid: int, root: str = CGROUP_ROOT) -> dict[str, str]:
    """{file: contents} of the cgroup v2 limits on a process and its ancestors ({} without v2)."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            path = next((line[3:].strip() for line in f if line.startswith("0::")), None)
    except OSError:
        return {}
    if path is None or not os.path.isfile(os.path.join(root, "cgroup.controllers")):
        return {}
    limits, parts = {}, [p for p in path.split("/") if p]
    for depth in range(len(parts) + 1):
        folder = "/".join(parts[:depth])
        for name in CGROUP_LIMITS:
            try:
                with open(os.path.join(root, folder, name)) as f:
                    limits[f"/{folder}/{name}".replace("//", "/")] = f.read().strip()
            except OSError:  # not there
                pass
    return limits


def limits_changed(before: dict, now: dict) -> list[str]:
    """The limits (cgroup_limits) that changed, in words."""
    return [f"{name} {before.get(name)} -> {now.get(name)}" for name in sorted(set(before) | set(now))
            if before.get(name) != now.get(name)]


def rescheduled(before: dict, now: dict, inherited: set) -> list[str]:
    """How the threads' scheduling changed, in words ([] if not); a new thread is checked against `inherited`."""
    if not before:  # /proc unreadable
        return []
    main = before[min(before)]
    changes = []
    for tid, state in now.items():
        if (tid in before and state != before[tid]) or (tid not in before and state not in inherited):
            old = before.get(tid, main)
            changed = [f"{name} {show(was)} -> {show(value)}"
                       for name, was, value in zip(SCHEDULING, old, state) if was != value]
            changes.append(("thread" if tid in before else "new thread") + f" {tid}: " + ", ".join(changed))
    return changes


SCHEDULING = ("nice", "policy", "CPUs", "cgroup")


@dataclass
class Schedule:
    """A process's scheduling as first read; `changes` names what differs now, save our own pinning (`pin`)."""

    pid: int
    threads: dict  # scheduling(pid)
    inherited: set
    limits: dict  # cgroup_limits(pid)

    @classmethod
    def read(cls, pid: int) -> "Schedule":
        threads = scheduling(pid)
        return cls(pid, threads, set(threads.values()), cgroup_limits(pid))

    def pin(self, cpu: int) -> None:
        """Record that we pinned the main thread (and threads it starts) to `cpu` (share_one_cpu)."""
        if self.pid in self.threads:
            nice, policy, _, cgroup = self.threads[self.pid]
            self.threads[self.pid] = (nice, policy, frozenset({cpu}), cgroup)
            self.inherited.add(self.threads[self.pid])

    def changes(self) -> list[str]:
        """What changed since the first read, in words ([] for nothing)."""
        return (rescheduled(self.threads, scheduling(self.pid), self.inherited)
                + limits_changed(self.limits, cgroup_limits(self.pid)))


def show(value) -> str:
    """A scheduling field in one line."""
    if isinstance(value, frozenset):
        return str(sorted(value))
    return value.strip().replace("\n", "; ") if isinstance(value, str) else str(value)


STOPPED_STATES = set("TtDZX")  # D: in a kernel call, it stops on return
STOP_WAIT_S = 5.0


def task_states(pid: int) -> str:
    """The state letter of each thread ('' once gone)."""
    return "".join(text.rsplit(")", 1)[1].split()[0] for text in task_files(pid, "stat") or [] if ")" in text)


def stop_all(roots, wait_s: float = STOP_WAIT_S) -> set:
    """SIGSTOP these processes and descendants until all threads stop; the pids stopped (TimeoutError past wait_s)."""
    stopped: set[int] = set()
    deadline = time.monotonic() + wait_s
    while True:
        running = [pid for pid in tree(roots) if not set(task_states(pid)) <= STOPPED_STATES]
        if not running:
            return stopped
        for pid in running:
            try:
                os.kill(pid, signal.SIGSTOP)
                stopped.add(pid)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"processes {running} did not stop within {wait_s:g} s")
        time.sleep(0.0001)


def continue_all(pids) -> None:
    """SIGCONT each of these processes."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


CPUS_ENV = "KERNEL_HARNESS_CPUS"  # the run's CPUs before timing_cpus_kept_free narrowed them


def run_cpus() -> list:
    """The CPUs the run was given (CPUS_ENV, else this process's own)."""
    given = os.environ.get(CPUS_ENV)
    return sorted(int(c) for c in given.split(",")) if given else sorted(os.sched_getaffinity(0))


def cpu_for_gpu(index: int) -> int:
    """The CPU a pair's workers on GPU `index` share for timing: one per physical GPU, not per torch index (runs
    under CUDA_VISIBLE_DEVICES all see cuda:0)."""
    return timing_cpu(run_cpus(), clocks.physical_index(index))


def timing_cpu(cpus: list, physical_gpu: int) -> int:
    """The CPU where this (NVML-numbered) GPU's pairs are timed."""
    return cpus[(physical_gpu + 1) % len(cpus)]


def reserved_for_timing(cpus: list, gpus) -> set:
    """The timing CPUs of these GPUs, where the rest of the run keeps at least gpus + 2 CPUs; else none."""
    gpus = set(gpus)
    if not gpus or len(cpus) < 2 * len(gpus) + 2:
        return set()
    return {timing_cpu(cpus, gpu) for gpu in gpus}


@contextlib.contextmanager
def timing_cpus_kept_free(gpus):
    """Keep this process and its children off these GPUs' timing CPUs (yielded): docs/decisions/process-offset.md"""
    cpus, before, entry = run_cpus(), os.environ.get(CPUS_ENV), os.sched_getaffinity(0)
    reserved = reserved_for_timing(cpus, gpus)
    if reserved and not set_every_thread(entry - reserved):
        reserved = set()
    if reserved:
        os.environ[CPUS_ENV] = ",".join(map(str, cpus))
    try:
        yield reserved
    finally:
        if reserved:
            if before is None:
                del os.environ[CPUS_ENV]
            else:
                os.environ[CPUS_ENV] = before
            set_every_thread(entry)


def set_every_thread(cpus: set) -> bool:
    """Set every thread's CPU affinity (sched_setaffinity sets one thread's); False where ours was refused."""
    try:
        os.sched_setaffinity(0, cpus)
    except OSError:
        return False
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:  # a thread that ended meanwhile
            pass
    return True


def share_one_cpu(pids, cpu: int) -> bool:
    """Pin these processes' main threads (and threads they start later) to one CPU; False where refused."""
    try:
        for pid in pids:
            os.sched_setaffinity(pid, {cpu})
        return True
    except OSError:
        return False
