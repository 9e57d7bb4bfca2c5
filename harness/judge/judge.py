"""The trusted process of one pair: the reference side, both workers, comparisons, guards and statistics.

It imports the problem, never the candidate. Started by the runner (runner/judges.py) or forked from the judge factory,
it reads the run's config and its pair's job on stdin and reports its stages and Result on the runner's pipe (main();
the messages: common/protocol.py).
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time
import traceback
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode  # imported ahead of the pair: it takes a while

from harness.common import protocol, stopping
from harness.common.config import Config, PRECISIONS
from harness.common.devices import is_gpu, torch_device
from harness.common.procs import adopt_orphans, children, kill_orphans, make_undumpable, my_children
from harness.common.records import Result, failure, one_line
from harness.common.verdict import PASSING_FLAGS, Status, Verdict
from harness.judge.memory import dump_memory_history, record_memory_history
from harness.judge.context import PairContext
from harness.judge.reference import Reference
from harness.judge.reports import into_result
from harness.judge.sandbox import Sandbox, WorkerFailure
from harness.judge.timing import PairTiming
from harness.judge.trials import Trials
from harness.judge.workers import PairWorkers
from harness.worker import timing


class PairJudge:
    """Judges one (problem, candidate) pair on one device: correctness here, then timing (PairTiming)."""

    def __init__(self, job: protocol.PairJob, workers: tuple, helpers: frozenset, report=None, gated: bool = False,
                 worker_threads: int | None = None):
        self.job, self.block = job, job.block
        self.cfg = job.config if self.block == 1 else confirmation_config(job.config)
        self.report = report  # the runner's pipe: each stage is announced there (Reporter.send)
        self.stage = "start"
        self.device = torch_device(job.device)
        # --precision: float inputs and both models' weights in this dtype (None: as the problem makes them).
        self.dtype = None if self.cfg.precision == "fp32" else getattr(torch, PRECISIONS[self.cfg.precision])
        self.result = Result(problem=job.problem, solution=job.solution, status=Status.CORRECT,
                             device=str(self.device), gpu=gpu_name(self.device), precision=self.cfg.precision,
                             mode=self.cfg.mode)
        self.reference = Reference(job, self.cfg, self.device, self.dtype, self.note, self.phase)
        self.workers = PairWorkers(job, self.cfg, self.device, self.dtype, self.reference, workers)
        self.helpers = helpers  # our own children that are no orphans (torch's shared-memory manager)
        self.context = PairContext(job, self.cfg, self.device, self.result, self.reference, self.workers, self.phase,
                                   self.note, gated, worker_threads or torch.get_num_threads())
        self.trials = Trials(self.context)

    def note(self, text: str) -> None:
        """A note for the result, once."""
        if text not in self.result.notes:
            self.result.notes.append(text)

    @contextlib.contextmanager
    def phase(self, name: str):
        """Add a phase's wall seconds to `phases_s`; a top-level phase is a stage, announced to the runner."""
        if "." not in name:
            self.stage = name
            if self.report is not None:
                self.report.send(protocol.Stage(name))
        if self.device.type == "cuda":  # GPU work is asynchronous: charge it to the phase that queued it
            torch.cuda.synchronize(self.device)
        started = timing.now_ns()
        try:
            yield
        finally:
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
            phases = self.result.phases_s = self.result.phases_s or {}
            phases[name] = round(phases.get(name, 0.0) + (timing.now_ns() - started) / 1e9, 3)

    def run(self) -> Result:
        """Judge the pair; every path ends in exactly one Result."""
        record_memory_history(self.device)
        try:
            self.stages()
        except Verdict as verdict:
            self.end_with(verdict)
        except WorkerFailure as failure_:
            self.end_with(Verdict(failure_.status, str(failure_)))
        except torch.cuda.OutOfMemoryError as exc:  # in this process: the reference's outputs, inputs or checks
            message = f"the judge ran out of GPU memory in stage '{self.stage}': {exc}"
            self.end_with(self.workers.blame_for_memory(message) or Verdict(Status.HARNESS_ERROR, message))
        except Exception as exc:  # the harness's own failure, never the candidate's status
            traceback.print_exc()
            self.end_with(Verdict(Status.HARNESS_ERROR, f"harness error in stage '{self.stage}': "
                                                        f"{type(exc).__name__}: {exc} (traceback in the judge log)"))
        finally:
            with self.phase("finish"):
                self.finish()
        return self.result

    def stages(self) -> None:
        """The pair's stages in order; the phases' reports written into the Result however they end."""
        timed = None
        try:
            with self.phase("reference"):
                self.reference.load()
                self.reference.memory.check(self.report)
                self.reference.build()
            with self.phase("build"):
                self.workers.import_both()
            with self.phase("workers"):
                self.result.compile_s = self.workers.construct_both()
            with self.phase("correctness"):
                try:
                    self.trials.run()
                finally:  # a build in the candidate's forward counts too
                    self.result.compile_s = self.workers.candidate_build_s
            into_result(self.result, self.trials.report)  # the timing phase reads its flags
            self.reference.start_timing()
            timed = PairTiming(self.context, self.trials)
            timed.time_pair()
        finally:  # (again: the timed rounds' output checks are the trials')
            into_result(self.result, self.trials.report, *([timed.report] if timed else []))

    def end_with(self, verdict: Verdict) -> None:
        """The pair's status, reason and flags from the verdict that ended it."""
        self.result.status, self.result.error = verdict.status, one_line(verdict.error)
        if verdict.status != Status.CORRECT:  # how a trial passed says nothing of a verdict that failed
            self.result.flags = [f for f in self.result.flags if f not in PASSING_FLAGS]
        self.result.flags += verdict.flags

    def finish(self) -> None:
        """Stop both workers, keep the candidate's log, and record each process's peak memory."""
        if self.reference.stateful:
            self.result.stateful = True
        with self.phase("finish.workers"):
            infos = close_workers(self.workers.sandbox, self.workers.ref_sandbox, self.job.log_path)
        with self.phase("finish.orphans"):
            self.result.orphans_killed = kill_orphans(self.helpers) or None  # processes the workers left behind
        dump_memory_history(self.device, f"{self.job.problem}__{self.job.solution}")
        peak_mb = max(self.reference.memory.peak_reserved / 2**20, timing.peak_memory_mb(self.device))
        record_peaks(self.result, peak_mb, infos, self.device.type == "cuda")


def close_workers(sandbox: Sandbox, ref_sandbox: Sandbox, log_path: str) -> dict:
    """Close both workers at once (docs/decisions/judge-pair.md), keep the candidate's log; their last words."""
    infos: dict = {}
    closing = threading.Thread(target=lambda: infos.update(reference=ref_sandbox.close()))
    if ref_sandbox is not None:
        closing.start()
    if sandbox is not None:
        infos["candidate"] = sandbox.close()
        Path(log_path).write_text(sandbox.log.text())
    if ref_sandbox is not None:
        closing.join()
    return infos


def record_peaks(result: Result, judge_mb: float, infos: dict, on_gpu: bool) -> None:
    """Each process's peak memory (MB) and, on a GPU, each worker's out-of-memory count (the workers' last words)."""
    candidate, reference = infos.get("candidate"), infos.get("reference")
    result.peak_mem_mb = {"judge": round(judge_mb, 1), "worker": reported_peak(candidate),
                          "reference_worker": reported_peak(reference)}
    if on_gpu:
        result.worker_ooms = {"worker": reported_count(candidate, "ooms"),
                              "reference_worker": reported_count(reference, "ooms")}


def confirmation_config(cfg: Config) -> Config:
    """A confirmation block's settings (runner/blocks.py): one trial, half the rounds and seconds, fresh workers."""
    return cfg.replace(trials=1, wide_trials=0, max_rounds=max(cfg.timing.min_rounds, cfg.timing.max_rounds // 2),
                       max_timing_s=cfg.timing.max_timing_s / 2)


def reported_count(info, key: str):
    """A worker's word on a count, checked; None when it gave none."""
    value = info.get(key) if isinstance(info, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def reported_peak(info):
    """A worker's word on its peak memory (MB), checked; None when it gave none."""
    try:
        peak = float(info["peak_mem_mb"])
    except (TypeError, KeyError, ValueError, OverflowError):
        return None
    return round(peak, 1) if math.isfinite(peak) else None


def gpu_name(device: torch.device):
    return torch.cuda.get_device_name(device) if device.type == "cuda" else None








def main() -> None:
    """Judge the pair whose job arrives on stdin; report its stages and Result on the original stdout.

    The job (with the run's secret) never touches the disk, the process is non-dumpable, and the Result leaves through a
    descriptor no worker inherits (docs/threat-model.md)."""
    make_undumpable()
    adopt_orphans()
    stopping.ignore_interrupts()  # a Ctrl-C is the runner's to act on: it kills us
    report = Reporter(os.dup(1))  # no worker keeps this descriptor (sandbox.become_worker)
    os.dup2(2, 1)  # anything printed from here on goes to the log, never into the protocol
    # Judges start ahead of their pairs: the workers fork before the job is read and before any device is touched.
    start = protocol.from_runner(read_line_unbuffered(0))
    if not isinstance(start, protocol.Start):
        raise SystemExit(f"the runner's first line must be its Start, got {start}")
    config, warm_device = start.config, start.warm_device
    start_up = StartUp(start.started_at)  # where a judge's start-up went (judge_start.* phases)
    if warm_device:
        ready_flop_counter()
        start_up.mark("flops")
    workers, helpers = start_workers(config)
    start_up.mark("workers")
    if warm_device:  # CUDA started when the runner says no pair on this GPU is timed
        report.send(protocol.ReadyToWarm())
    message = protocol.next_from_runner()
    if warm_device and isinstance(message, protocol.Warm):
        start_up.mark("held")
        warm_up_with_workers(warm_device, workers)
        start_up.mark("warm")
        report.send(protocol.Warmed())
        message = protocol.next_from_runner()
    if not isinstance(message, protocol.Job):  # End: the run ended before it needed this judge
        for worker in workers:
            worker.close()
        os._exit(0)
    report.send(protocol.Outcome(judge_pair(message, workers, helpers, report, start_up).to_dict()))
    sys.stdout.flush()
    os._exit(0)  # skip CUDA IPC teardown races at interpreter exit


def judge_pair(message: protocol.Job, workers: tuple, helpers: frozenset, report: "Reporter",
               start_up: "StartUp") -> Result:
    """The pair's Result; a bug before the pair began still yields one (harness_error), never a silent pair."""
    job, sent_at = message.job, message.sent_at
    waited_s = max(0.0, time.time() - (sent_at or time.time()))  # for a judge still starting up
    report.send(protocol.Workers([w.proc.pid for w in workers]))  # each leads its own process group
    worker_threads = torch.get_num_threads()  # the workers, forked before, keep PyTorch's default
    if not is_gpu(job.device):
        torch.set_num_threads(1)  # no thread of ours spins beside a timed call (judge_processes.GPU_ENV)
    try:
        if is_gpu(job.device):  # what PyTorch makes on "the current device" (memory pools) is the pair's
            torch.cuda.set_device(torch_device(job.device))
        judge = PairJudge(job, workers, helpers, report, gated=message.gated, worker_threads=worker_threads)
        judge.result.phases_s = {"judge_start": round(waited_s, 3), **start_up.phases(sent_at)}
        return judge.run()
    except Exception as exc:
        traceback.print_exc()
        return failure(job.problem, job.solution, Status.HARNESS_ERROR,
                       f"harness error: {type(exc).__name__}: {exc} (traceback in the judge log)")


def start_workers(config: Config) -> tuple:
    """(the candidate's worker, the reference's), forked from us, and our own other children (helpers)."""
    # The candidate's worker first (confined); the reference's, forked second, holds a copy of its channel.
    workers = tuple(Sandbox({}, config.limits.output_limit_bytes, config.limits.kill_grace_s, confined=side == 0)
                    for side in range(2))
    # torch's shared-memory manager, started before candidate code runs, is a child of ours that no orphan kill takes.
    torch.empty(1).share_memory_()
    helpers = frozenset(my_children()) - {w.proc.pid for w in workers}
    ours = helpers | {w.proc.pid for w in workers}
    # Any other child of ours is an orphan a candidate's process left (we are its subreaper): the candidate's.
    workers[0].strays = lambda: [pid for pid in children(os.getpid()) if pid not in ours]
    return workers, helpers


def ready_flop_counter() -> None:
    """FlopCounterMode's first use, seconds of CPU, before the workers fork (docs/decisions/judge-pair.md)."""
    with FlopCounterMode(display=False):
        torch.ones(2).sigmoid()


class StartUp:
    """The wall seconds of a judge's start-up steps (judge_start.* phases): why a judge was late for its pair."""

    def __init__(self, started_at):
        self.last = started_at if isinstance(started_at, (int, float)) else None
        self.steps = {}
        self.mark("import")

    def mark(self, step: str) -> None:
        """The step that ends now."""
        now = time.time()
        if self.last is not None:
            self.steps[f"judge_start.{step}"] = round(max(0.0, now - self.last), 3)
        self.last = now

    def phases(self, sent_at) -> dict:
        """The steps, and the wait for the pair after them (negative waits: the pair was sent before it was ready)."""
        if self.last is not None and isinstance(sent_at, (int, float)):
            self.steps["judge_start.idle"] = round(max(0.0, sent_at - self.last), 3)
        return self.steps


def warm_up_with_workers(device: str, workers: tuple) -> None:
    """Start CUDA here and in both workers at once (docs/decisions/judge-pair.md)."""
    asked = []
    try:
        for worker in workers:
            worker.start_warm_up(device)
            asked.append(worker)
        torch.ones(1, device=device)
    except Exception as exc:  # only time is at stake: the pair will start them itself
        print(f"warm-up failed: {type(exc).__name__}: {exc}", flush=True)
    # Each worker's word is read whatever happened: unread, it would pass for the reply to the pair's first request.
    for worker in asked:
        try:
            worker.finish_warm_up()
        except Exception as exc:
            print(f"warm-up failed: {type(exc).__name__}: {exc}", flush=True)


def read_line_unbuffered(fd: int) -> str:
    """One line from a descriptor, a byte at a time: nothing after it is read ahead into our memory."""
    line = bytearray()
    while (byte := os.read(fd, 1)) and byte != b"\n":
        line += byte
    return line.decode()


class Reporter:
    """The judge's side of the runner's pipe: one message (common/protocol.py) a line, written whole."""

    def __init__(self, fd: int):
        self.fd = fd

    def send(self, message) -> None:
        data = protocol.encode(message).encode()
        while data:
            data = data[os.write(self.fd, data):]


if __name__ == "__main__":
    main()
