"""Process hygiene for the trusted processes (runner, judge): kept from the user's other processes, and
the processes a worker leaves behind found and killed. Imports nothing heavy: the runner uses it.
"""
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
    """prctl(PR_SET_DUMPABLE, 0): this process's /proc/<pid>/mem, environ and fd become root's only, so a
    worker (same user) cannot read the run's secret from the memory of its judge or runner. `dumpable=True`
    undoes it (a worker forked from its judge, as exec would)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, int(dumpable), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: nothing to do
        pass


def adopt_orphans() -> None:
    """prctl(PR_SET_CHILD_SUBREAPER): processes a worker leaves behind (even in a session of their own)
    become this process's children when the worker dies, so kill_orphans can find them."""
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
    """SIGKILL every child of this process but `spare` (our own helpers); how many were alive.

    Children already dead (zombies: processes the group kill ended, then handed to us) are only reaped.
    Reaping never blocks for more than `wait_s` in all: a process stuck in the kernel (a GPU driver call)
    is left behind rather than holding up the pair.
    """
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
    """The text of /proc/<pid>/task/<tid>/<name> for each thread of a process ([] once it is gone); None where
    the kernel has no such file."""
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
                return None  # the thread is there, the file is not: a kernel without it
        except OSError:
            pass
    return texts


def children(pid: int) -> list[int]:
    """The children of a process (every thread's): from /proc/<pid>/task/*/children, or, on a kernel without
    those files, from every process's parent pid."""
    texts = task_files(pid, "children")
    if texts is None:
        return [child for child, (parent, _) in processes().items() if parent == pid]
    return [int(child) for text in texts for child in text.split()]


def tree(roots) -> list[int]:
    """These processes and all their descendants (alive at the time of reading)."""
    seen, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.append(pid)
            todo += children(pid)
    return seen


def scheduling(pid: int) -> dict[int, tuple]:
    """{thread id: (nice, policy, CPUs allowed, cgroup)} of a process's threads: what another process of the same
    user can change to slow it down without reading it (setpriority, sched_setaffinity, a write to cgroup.procs)."""
    states: dict = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:  # the process is gone (its death is the pair's verdict, found elsewhere)
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


CGROUP_ROOT = "/sys/fs/cgroup"  # cgroup v2's mount (a hybrid machine's v2 tree is at /sys/fs/cgroup/unified)
# Limits that slow every process in a cgroup; the user may write them where the cgroup is delegated to it (a desktop
# session under systemd), and a candidate could lift them in its own windows and set them again before the other's.
CGROUP_LIMITS = ("cpu.max", "cpu.weight", "cpu.idle", "cpu.uclamp.max", "cpuset.cpus", "memory.high", "memory.max",
                 "io.max")


def cgroup_limits(pid: int, root: str = CGROUP_ROOT) -> dict[str, str]:
    """{file: contents} of the cgroup v2 limits on a process: its cgroup's and every ancestor's ({} without v2)."""
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
            except OSError:  # not there (the root has none; a controller not enabled)
                pass
    return limits


def limits_changed(before: dict, now: dict) -> list[str]:
    """The limits (cgroup_limits) that changed, in words."""
    return [f"{name} {before.get(name)} -> {now.get(name)}" for name in sorted(set(before) | set(now))
            if before.get(name) != now.get(name)]


def rescheduled(before: dict, now: dict, inherited: set) -> list[str]:
    """How a process's threads' scheduling changed, in words: a thread that kept its id has another state than
    `before` gives it, or a new thread has a state not in `inherited` (a new one inherits its creator's: it is shown
    against the main thread's). [] when unchanged; threads that ended are no change."""
    if not before:  # /proc unreadable here: nothing to compare
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


SCHEDULING = ("nice", "policy", "CPUs", "cgroup")  # the fields of a thread's state in `scheduling`


@dataclass
class Schedule:
    """A process's scheduling as first read (its threads' states, the cgroup limits on it) and the states a thread it
    starts may have (its creator's): `changes` names what differs now, but for the pinning `pin` records as ours."""

    pid: int
    threads: dict  # scheduling(pid)
    inherited: set
    limits: dict  # cgroup_limits(pid)

    @classmethod
    def read(cls, pid: int) -> "Schedule":
        threads = scheduling(pid)
        return cls(pid, threads, set(threads.values()), cgroup_limits(pid))

    def pin(self, cpu: int) -> None:
        """The main thread now on `cpu` by our hand (share_one_cpu), and the threads it starts from now on too."""
        if self.pid in self.threads:
            nice, policy, _, cgroup = self.threads[self.pid]
            self.threads[self.pid] = (nice, policy, frozenset({cpu}), cgroup)
            self.inherited.add(self.threads[self.pid])

    def changes(self) -> list[str]:
        """What changed since the first read, in words ([] for nothing)."""
        return (rescheduled(self.threads, scheduling(self.pid), self.inherited)
                + limits_changed(self.limits, cgroup_limits(self.pid)))


def show(value) -> str:
    """A scheduling field in a line: CPUs sorted, a cgroup's lines joined."""
    if isinstance(value, frozenset):
        return str(sorted(value))
    return value.strip().replace("\n", "; ") if isinstance(value, str) else str(value)


STOPPED_STATES = set("TtDZX")  # stopped, traced, in a kernel call it leaves stopped, or dead
STOP_WAIT_S = 5.0


def task_states(pid: int) -> str:
    """The state letter of each thread of a process ('' once it is gone)."""
    return "".join(text.rsplit(")", 1)[1].split()[0] for text in task_files(pid, "stat") or [] if ")" in text)


def stop_all(roots, wait_s: float = STOP_WAIT_S) -> set:
    """SIGSTOP these processes and every descendant, until every thread of each is stopped (a process that
    forks meanwhile is caught on the next pass); the pids stopped. Raises TimeoutError past `wait_s`."""
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
    """SIGCONT each of these processes (gone ones ignored)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


CPUS_ENV = "KERNEL_HARNESS_CPUS"  # the CPUs the run was given, before timing_cpus_kept_free narrowed its processes'


def run_cpus() -> list:
    """The CPUs the run was given: as the runner found them (CPUS_ENV), else this process's own."""
    given = os.environ.get(CPUS_ENV)
    return sorted(int(c) for c in given.split(",")) if given else sorted(os.sched_getaffinity(0))


def cpu_for_gpu(index: int) -> int:
    """The CPU that the workers of a pair on GPU `index` (torch's) share for its timing: one per physical GPU (the
    first CPU left to the rest of the machine), so that pairs timed at once on different GPUs never share one while
    there are enough, also when each run was given its GPU by CUDA_VISIBLE_DEVICES (then both see it as cuda:0)."""
    return timing_cpu(run_cpus(), clocks.physical_index(index))


def timing_cpu(cpus: list, physical_gpu: int) -> int:
    """Of these CPUs, the one where the pairs of this (NVML-numbered) GPU are timed."""
    return cpus[(physical_gpu + 1) % len(cpus)]


def reserved_for_timing(cpus: list, gpus) -> set:
    """The timing CPUs of these (NVML-numbered) GPUs, where there are CPUs enough to keep them for timing alone (the
    rest of the run keeps at least gpus + 2: a judge, its workers' correctness stage, builds); else none."""
    gpus = set(gpus)
    if not gpus or len(cpus) < 2 * len(gpus) + 2:
        return set()
    return {timing_cpu(cpus, gpu) for gpu in gpus}


@contextlib.contextmanager
def timing_cpus_kept_free(gpus):
    """A GPU run on these (NVML-numbered) GPUs: this process, its threads and every process it starts meanwhile, kept
    off the CPUs where pairs are timed, so that only the two workers a judge pins there (share_one_cpu) run on one
    while a pair is timed. Yields the CPUs kept."""
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
    """The CPU affinity of each of this process's threads (sched_setaffinity sets one thread's); False where the calling
    thread's was refused."""
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
    """Pin these processes (their main threads, where a worker launches its GPU work, and the threads they start
    later) to one CPU; False where the machine refuses."""
    try:
        for pid in pids:
            os.sched_setaffinity(pid, {cpu})
        return True
    except OSError:
        return False
