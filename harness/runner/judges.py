"""Judge processes seen from the runner: started (ahead of their pairs on GPU runs), given a pair, and followed
stage by stage against each stage's deadline (common/protocol's messages), so a run never waits on a judge for ever.
Never imports torch."""
from __future__ import annotations

import dataclasses
import itertools
import math
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from harness.common import protocol, stages, stopping
from harness.common.config import Config
from harness.common.devices import as_seen_alone, gpu_index, is_gpu, only_this_gpu
from harness.runner.factory import FactoryGone, ForkedJudge, JudgeFactory
from harness.common.records import Result, failure
from harness.common.verdict import Status
from harness.common.places import ROOT


# Fixed malloc thresholds and no thread cache, so both sides' calls get their memory alike on the CPU (workers
# inherit it): docs/decisions/judge-env.md.
JUDGE_ENV = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30),
             "GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"}
# GPU runs only: both workers share one CPU there, so idle OpenMP threads must sleep, not spin (same file).
GPU_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}
# Log numbers for the whole process: a service's devices each have a starter, and their logs share one folder.
LOG_NUMBERS = itertools.count(1)
USER_ENV = {k: os.environ[k] for k in ("OMP_WAIT_POLICY", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                                       "GLIBC_TUNABLES") if k in os.environ}  # the user's own settings win


def judge_env(device: str, pair_device: Optional[str] = None) -> dict:
    """The environment of the run's judges and workers (JUDGE_ENV, and GPU_ENV on a GPU run); with `pair_device`,
    that GPU alone is visible."""
    # os.environ as it is now: the run's CPUs (procs.CPUS_ENV) are set after this module is imported
    return {**os.environ, **JUDGE_ENV, **(GPU_ENV if is_gpu(device) else {}), **USER_ENV, **only_this_gpu(pair_device)}


# a judge of its own; most are forked from the judge factory
JUDGE_COMMAND = (sys.executable, "-m", "harness.judge.judge")


class Judge:
    """One judge process: its pipes, its log, and the lines it has sent (read by a thread of ours)."""

    command = JUDGE_COMMAND

    def __init__(self, ctx, device: Optional[str], warm: bool, log_path: Path,
                 on_ready_to_warm: Callable[["Judge"], None] = lambda judge: None,
                 factory: Optional[JudgeFactory] = None):
        self.log_path, self.device = log_path, device
        self.local_device = as_seen_alone(device)  # its name in the judge, which sees this GPU alone
        with open(log_path, "w") as log:
            proc: ForkedJudge | subprocess.Popen[str] | None = None
            if factory is not None and self.command == JUDGE_COMMAND:  # (tests replace the command)
                try:
                    proc = factory.fork(log)
                except FactoryGone as exc:
                    print(f"{exc}: judges are started as processes of their own", file=log, flush=True)
            if proc is None:
                proc = subprocess.Popen(list(self.command), cwd=ROOT, env=judge_env(ctx.device, device),
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
            self.proc = proc
        self.lines: queue.Queue = queue.Queue()
        self.outbox: queue.Queue = queue.Queue()
        self.worker_groups: list = []
        self.on_ready_to_warm = on_ready_to_warm
        self.warmed = threading.Event()  # its warm-up (asked for with WARM) is over, or it is gone
        self.taken = False  # given a pair: no WARM may follow the job on its stdin
        self.warm_sent = False  # told to start CUDA
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._write, daemon=True).start()
        warm_device = self.local_device if warm and device and is_gpu(device) else None
        self.write(protocol.encode(protocol.Start(ctx.config, warm_device, time.time())))

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None  # our pipe from the judge
        for line in stdout:
            try:
                message = protocol.from_judge(line)
            except ValueError as exc:  # follow_pair says so: the pair is a harness_error
                message = exc
            if isinstance(message, protocol.ReadyToWarm):  # a judge started ahead, done with its CPU start-up
                self.on_ready_to_warm(self)
            elif isinstance(message, protocol.Warmed):
                self.warmed.set()
            elif message is not None:
                self.lines.put(message)
        self.warmed.set()
        self.lines.put(None)  # end of output: the judge exited (or closed it)

    # self.lines holds protocol messages, a ValueError for an unreadable line, and None at the judge's end.

    def write(self, text: str, last: bool = False) -> None:
        """Queue a line for the judge's stdin (written in order by a thread, never blocking us); `last` closes it."""
        self.outbox.put(text)
        if last:
            self.outbox.put(None)

    def _write(self) -> None:
        try:
            stdin = self.proc.stdin
            assert stdin is not None  # our pipe to the judge
            while (text := self.outbox.get()) is not None:
                stdin.write(text)
                stdin.flush()
            stdin.close()
        except (OSError, ValueError):  # the judge is gone: its output says so
            pass

    def kill(self) -> None:
        """SIGKILL the judge and its workers' process groups."""
        for group in self.worker_groups:
            try:
                os.killpg(int(group), signal.SIGKILL)
            except (ProcessLookupError, PermissionError, ValueError, OverflowError):
                pass
        self.proc.kill()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:  # stuck in the kernel (a GPU driver call): leave it, move on
            pass

    def reap(self, wait_s: float = 30) -> None:
        """Wait at most `wait_s` for a judge that has said its last, then kill it."""
        try:
            self.proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            self.kill()

    def dismiss(self) -> None:
        """Let an unused judge go: End tells it to stop its workers and exit."""
        self.write(protocol.encode(protocol.End()), last=True)
        self.reap()
        self.log_path.unlink(missing_ok=True)


class JudgeStarter:
    """Starts judge processes: `ahead` per GPU before their pairs (at most `pairs` left), their CUDA start-ups held
    while a pair is sized and timed: docs/decisions/judges-ahead.md."""

    WARM = protocol.encode(protocol.Warm())
    WARM_WAIT_S = 60.0  # a start-up stuck longer than this is the GPU probe's to catch

    def __init__(self, ctx, devices: tuple, ahead: int, factory: bool = False, pairs: Optional[int] = None):
        self.ctx, self.ahead = ctx, ahead
        self.left = math.inf if pairs is None else pairs  # pairs yet to take a judge (None: not known, no limit)
        self.lock = threading.Lock()
        self.use_factory = factory
        self.factories: dict = {}  # device: its judges' factory (seeing that GPU alone), started with its first judge
        self.holding: set = set()  # devices where no judge ahead may start CUDA now
        self.held: dict = {}  # device: judges ready to warm up, waiting for that device's pair
        self.warming: dict = {}  # device: judges told to warm up
        self.ready: dict[str, list[Judge]] = {device: [] for device in devices}
        for n in range(int(min(len(devices) * ahead, self.left))):
            device = devices[n % len(devices)]
            self.ready[device].append(self.start(device))

    def start(self, device: Optional[str], ahead: bool = True) -> Judge:
        """A judge process, given the run's config (its log is renamed after its pair later)."""
        log_dir = self.ctx.run_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        with self.lock:
            log_path = log_dir / f"judge-{os.getpid()}-{next(LOG_NUMBERS)}.log"
            if self.use_factory and device not in self.factories:  # (else each judge is a Python process of its own)
                self.factories[device] = JudgeFactory(judge_env(self.ctx.device, device), ROOT,
                                                      log_dir / f"judge-factory-{os.getpid()}-{next(LOG_NUMBERS)}.log",
                                                      self.ctx.config.limits.start_timeout)
        return Judge(self.ctx, device, warm=ahead and bool(self.ahead), log_path=log_path,
                     on_ready_to_warm=self.let_warm, factory=self.factories.get(device))

    def let_warm(self, judge: Judge) -> None:
        """A judge ahead may start CUDA now, unless its GPU's pair holds start-ups (then it waits for their release)."""
        with self.lock:
            if judge.taken:  # its pair began first: it starts CUDA itself, untimed
                return
            if judge.device in self.holding:
                self.held.setdefault(judge.device, []).append(judge)
                return
            self.warm(judge)

    def warm(self, judge: Judge) -> None:
        """(under the lock)"""
        self.warming.setdefault(judge.device, []).append(judge)
        judge.warm_sent = True
        judge.write(self.WARM)

    def hold_warm_ups(self, device: str, wait: bool = True) -> float:
        """No start-up may begin on `device`; with `wait`, those under way end first; returns the seconds waited."""
        started = time.monotonic()
        with self.lock:
            self.holding.add(device)
            under_way = self.warming.pop(device, []) if wait else []
        for judge in under_way:
            judge.warmed.wait(max(0.0, self.WARM_WAIT_S - (time.monotonic() - started)))
        return time.monotonic() - started

    def release_warm_ups(self, device: str) -> None:
        """The pair on `device` leaves room, is no longer timed, or is over: waiting judges start CUDA."""
        with self.lock:
            self.holding.discard(device)
            for judge in self.held.pop(device, []):
                if not judge.taken:
                    self.warm(judge)

    def make_room(self, device: str) -> None:
        """The pair on `device` crowds it: judges ahead that started CUDA there are replaced by fresh ones."""
        with self.lock:
            self.holding.add(device)
            waiting = self.ready.get(device, [])
            crowding = [judge for judge in waiting if judge.warm_sent]
            self.ready[device] = [judge for judge in waiting if not judge.warm_sent]
            self.warming.pop(device, None)
        for judge in crowding:
            threading.Thread(target=judge.dismiss, daemon=True).start()
            replacement = self.start(device)
            with self.lock:
                self.ready[device].append(replacement)

    def take(self, device: str, confirming: bool = False) -> Judge:
        """A started judge for `device`, another started in its place; `confirming` (a block) leaves the count."""
        stopping.check()
        with self.lock:
            self.left -= 0 if confirming else 1
            waiting = self.ready.get(device, [])
            taken = waiting.pop(0) if waiting else None
            if taken is not None:
                taken.taken = True
            if self.ahead:
                self.holding.add(device)
            more = self.ahead and sum(map(len, self.ready.values())) < self.left
        if more:
            replacement = self.start(device)
            with self.lock:
                self.ready.setdefault(device, []).append(replacement)
        if taken is None:  # none was waiting: one for now, which starts CUDA with its pair
            taken = self.start(device, ahead=False)
            taken.taken = True
        return taken

    def close(self) -> None:
        """Let the judges no pair needed go."""
        with self.lock:
            left = [judge for waiting in self.ready.values() for judge in waiting]
            self.ready = {}
            factories = list(self.factories.values())
        for judge in left:
            judge.dismiss()
        for factory in factories:
            factory.close()


def follow_pair(job: protocol.PairJob, judge: Judge, cfg: Config, log_dir: Path, stem: str,
                on_stage: Callable[[str], None] = lambda stage: None,
                starter: Optional[JudgeStarter] = None) -> Result:
    """Give a pair's job to a judge and follow it to its Result (`timeout` past a deadline, died: `harness_error`)."""
    # Job and Result travel by pipe, never as a file a candidate could read or forge.
    pair = FollowedPair(job, judge, cfg, stem, on_stage, starter)
    try:
        return pair.follow()
    except (ValueError, TypeError, KeyError) as exc:
        judge.kill()
        return pair.failed(Status.HARNESS_ERROR, f"unreadable message from the judge in stage '{pair.stage}': {exc}")
    finally:
        pair.let_go()
        judge.log_path.replace(log_dir / f"{stem}.judge.log")


class FollowedPair:
    """follow_pair's state: the judge's stage, when it began, and whether judges ahead are held for this pair."""

    def __init__(self, job: protocol.PairJob, judge: Judge, cfg: Config, stem: str, on_stage, starter):
        self.job, self.judge, self.stem, self.on_stage, self.starter = job, judge, stem, on_stage, starter
        self.deadlines = stages.stage_deadlines(cfg)
        self.gated = starter is not None and bool(starter.ahead) and judge.device is not None
        self.held = self.gated  # warm-ups of judges ahead held for this pair (take() began it)
        seen_as = judge.local_device  # the judge's name for the GPU, when it sees that GPU alone
        local = dataclasses.replace(job, device=seen_as) if seen_as is not None and seen_as != job.device else job
        judge.write(protocol.encode(protocol.Job(local, time.time(), self.gated)), last=not self.gated)
        self.enter("start")

    def follow(self) -> Result:
        """The judge's lines until its Result, or the failure that ends the pair first."""
        while True:
            try:
                message = self.judge.lines.get(timeout=max(self.deadlines[self.stage] - self.elapsed(), 0.0))
            except queue.Empty:
                self.judge.kill()
                stopping.check()
                return self.failed(Status.TIMEOUT, f"the judge was still in stage '{self.stage}' after its deadline "
                                                   f"of {self.deadlines[self.stage]:g} s and was stopped")
            if message is None:
                self.judge.reap()
                stopping.check()  # killed because the run was stopped: this pair records nothing
                return self.failed(Status.HARNESS_ERROR, f"the judge process died in stage '{self.stage}' "
                                                         f"({exit_reason(self.judge.proc.returncode)})")
            if isinstance(message, ValueError):
                raise message
            if isinstance(message, protocol.Outcome):
                result, exiting = Result.from_dict(message.result), time.monotonic()
                if is_gpu(self.job.device):  # as the run names it (the judge saw this GPU alone, as cuda:0)
                    result.device = f"cuda:{gpu_index(self.job.device)}"
                self.judge.reap()  # it exits right after its Result
                result.phases_s = {**(result.phases_s or {}), "judge_exit": round(time.monotonic() - exiting, 3)}
                return result
            if isinstance(message, protocol.Stage) and message.name in self.deadlines:
                self.enter(message.name)
            elif isinstance(message, protocol.Footprint) and self.held:
                self.sized(message)
            elif isinstance(message, protocol.Workers):
                self.judge.worker_groups = message.pids

    def enter(self, stage: str) -> None:
        """The judge began `stage`: its deadline starts; a gated pair holds warm-ups from timing_setup to finish."""
        self.stage, self.started = stage, time.monotonic()
        self.on_stage(stage)
        if self.gated and stage == "timing_setup":
            self.held = True
            self.starter.hold_warm_ups(self.judge.device)
            self.judge.write(protocol.encode(protocol.Go()), last=True)
        elif self.held and stage == "finish":
            self.held = False
            self.starter.release_warm_ups(self.judge.device)

    def sized(self, footprint: protocol.Footprint) -> None:
        """The pair's footprint is known: judges ahead may start CUDA beside it, or make room."""
        if footprint.crowded:
            self.starter.make_room(self.judge.device)
        else:
            self.held = False
            self.starter.release_warm_ups(self.judge.device)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def failed(self, status: Status, message: str) -> Result:
        return failure(self.job.problem, self.job.solution, status,
                       f"{message}; see logs/{self.stem}.judge.log" if status == Status.HARNESS_ERROR
                       else f"{message} (see logs/{self.stem}.judge.log)")

    def let_go(self) -> None:
        """Whatever happened: judges ahead released, the judge's stdin closed (a gated pair kept it open)."""
        if self.held:
            self.starter.release_warm_ups(self.judge.device)
        self.judge.outbox.put(None)


def exit_reason(code: Optional[int]) -> str:
    """A dead judge's exit code in words (a SIGKILL: docs/decisions/judge-death.md)."""
    if code == -signal.SIGKILL:
        return ("exit code -9: killed, most likely by the out-of-memory killer; on a small machine shrink the problem "
                "with --set")
    return f"exit code {code}"
