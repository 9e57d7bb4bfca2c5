"""The evaluation service's core, without HTTP: accepted jobs journaled under a state folder (fsynced before they are
acknowledged), their extensions built ahead in CPU workers (run.py's build stage), judged one at a time on each device
by judges kept warm across jobs, each Result written once. A service started again on the same folder judges the jobs
it had accepted and not finished."""
from __future__ import annotations

import json
import queue
import secrets
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from harness.common import discover, store
from harness.common.config import Config, build_config
from harness.common.devices import is_gpu
from harness.common.errors import UserError
from harness.common.records import Result, failure
from harness.common.verdict import Status
from harness.runner import api, builds, environment, judges, runner

SERVICE_ONLY = ("device", "results_dir", "build_cache_dir", "peaks_cache_dir", "judges_ahead")  # not a job's to set


@dataclass
class Job:
    """One accepted evaluation: its sources and options as the client sent them."""

    id: str
    problem: str  # a name under problems/, or source text
    candidate: str  # source text
    options: dict  # precision, mode, preset, sizes, settings (api.evaluate's keywords)
    accepted: float  # time.time() when journaled


class Service:
    """Jobs in, Results out: journal, queue, and one judging thread per device."""

    def __init__(self, state_dir: Path, config_file: Optional[str], overrides: dict, devices: list[str], env: dict):
        self.state_dir, self.env = Path(state_dir), env
        self.config_file, self.overrides = config_file, overrides  # a job's own options go over them
        self.config = build_config(config_file, overrides)
        for folder in ("jobs", "results", "sources"):
            (self.state_dir / folder).mkdir(parents=True, exist_ok=True)
        self.devices = devices
        self.pending: queue.Queue = queue.Queue()
        self.running: dict[str, str] = {}  # job id: device
        self.lock = threading.Lock()
        self.draining = threading.Event()
        self.threads: list[threading.Thread] = []
        self.prebuilt: dict[str, builds.Prebuilt] = {}  # job id: what its build stage did
        self.building = 0
        self.builder, self.build_ctx = self.build_stage()
        self.recovered = self.requeue_unfinished()

    def build_stage(self) -> tuple[Optional[ThreadPoolExecutor], Optional[runner.RunContext]]:
        """CPU workers that build candidates' extensions while the devices judge, where run.py would have them."""
        if not self.devices or not builds.enabled(self.config, self.devices[0]):
            return None, None
        ctx = runner.new_context(self.config, self.devices[0], {}, self.state_dir / "run", self.env)
        return ThreadPoolExecutor(builds.pool_size(self.config), thread_name_prefix="harness-build"), ctx

    def queue(self, job: Job) -> None:
        """Queue a job for the devices; one whose candidate builds an extension is built first."""
        if self.builder is None or not discover.builds_extension(job.candidate):
            self.pending.put(job)
            return
        with self.lock:
            self.building += 1
        self.builder.submit(self.build_then_queue, job)

    def build_then_queue(self, job: Job) -> None:
        """The job's build stage (its outcome kept for its evaluation), then its place in the queue."""
        try:
            assert self.build_ctx is not None
            ctx = self.build_ctx if not job.options else self.context_for(job, self.build_ctx)
            plan = runner.plan_pairs([self.pair_of(job)], ctx)[0]
            built = runner.prebuild_pair(plan, ctx) if plan.prebuild and not self.draining.is_set() else None
            if built is not None:
                with self.lock:
                    self.prebuilt[job.id] = built
        except Exception as exc:  # the stage only saves time: the evaluation builds (and judges) it
            print(f"job {job.id}: build stage failed ({type(exc).__name__}: {exc})", file=sys.stderr, flush=True)
        finally:
            with self.lock:
                self.building -= 1
            self.pending.put(job)

    def start(self) -> None:
        """One judging thread per device, each with its run context and its judges kept warm."""
        for device in self.devices:
            thread = threading.Thread(target=self.judge_jobs, args=(device,), name=f"judge-{device}", daemon=True)
            thread.start()
            self.threads.append(thread)

    def submit(self, problem: str, candidate: str, options: Optional[dict] = None) -> str:
        """Check a job (a UserError says what is wrong), journal it (fsynced) and queue it; its id."""
        return self.submit_many([(problem, candidate, options)])[0]

    def submit_many(self, items: list) -> list[str]:
        """(problem, candidate, options) jobs, all checked before any is journaled; their ids, in order."""
        if self.draining.is_set():
            raise RuntimeError("the service is stopping")
        jobs = [Job(secrets.token_hex(8), problem, candidate, dict(options or {}), time.time())
                for problem, candidate, options in items]
        for job in jobs:
            self.pair_of(job)
            self.job_config(job)
        for job in jobs:
            store.write_atomic(self.state_dir / "jobs" / f"{job.id}.json", json.dumps(job.__dict__))
            self.queue(job)
        return [job.id for job in jobs]

    def status(self, job_id: str) -> Optional[dict]:
        """{"id", "state", and "result" once done}, or None for an unknown id."""
        done = self.state_dir / "results" / f"{job_id}.json"
        if done.exists():
            return {"id": job_id, "state": "done", "result": json.loads(done.read_text())}
        if not (self.state_dir / "jobs" / f"{job_id}.json").exists():
            return None
        with self.lock:
            state = "running" if job_id in self.running else "queued"
        return {"id": job_id, "state": state}

    def health(self) -> dict:
        """What the service holds and does now."""
        with self.lock:
            running, building = len(self.running), self.building
        return {"status": "draining" if self.draining.is_set() else "ok", "devices": self.devices,
                "building": building, "queued": self.pending.qsize(), "running": running,
                "recovered": self.recovered}

    def drain(self, timeout: Optional[float] = None) -> None:
        """Take no new job; let the running ones end (the queued stay journaled for the next start)."""
        self.draining.set()
        if self.builder is not None:
            self.builder.shutdown(wait=False, cancel_futures=True)
        for _ in self.threads:
            self.pending.put(None)
        for thread in self.threads:
            thread.join(timeout)

    def requeue_unfinished(self) -> int:
        """Jobs journaled by an earlier service and never finished, queued again in the order they came."""
        unfinished = []
        for path in (self.state_dir / "jobs").glob("*.json"):
            if not (self.state_dir / "results" / path.name).exists():
                unfinished.append(Job(**json.loads(path.read_text())))
        for job in sorted(unfinished, key=lambda j: j.accepted):
            self.queue(job)
        return len(unfinished)

    def judge_jobs(self, device: str) -> None:
        """The judging loop of one device, until drained."""
        ctx = runner.new_context(self.config, device, {}, self.state_dir / "run", self.env)
        ctx.isolation = environment.isolation(self.config, device)
        ahead = self.config.scheduling.judges_ahead if is_gpu(device) else 0
        starter = judges.JudgeStarter(ctx, (device,), ahead=min(ahead, 1), factory=True)
        try:
            while not self.draining.is_set():
                job = self.pending.get()
                if job is None or self.draining.is_set():  # a job left queued stays journaled
                    break
                with self.lock:
                    self.running[job.id] = device
                try:
                    self.record(job, self.judge(job, ctx, starter))
                except OSError as exc:  # its Result could not be written: judged again at the next start
                    print(f"job {job.id}: result not written ({exc})", file=sys.stderr, flush=True)
                finally:
                    with self.lock:
                        self.running.pop(job.id, None)
        finally:
            starter.close()

    def judge(self, job: Job, ctx: runner.RunContext, starter: judges.JudgeStarter) -> Result:
        """One job's Result; a fault of the harness is a harness_error, never the service's end."""
        try:
            pair = self.pair_of(job)
            job_ctx = ctx if not job.options else self.context_for(job, ctx)
            plan = runner.plan_pairs([pair], job_ctx)[0]
            # A judge started ahead holds the service's limits (its workers' output bound and kill grace); the job's
            # own settings travel with its job. Other limits: a judge of its own.
            shared = job_ctx.config.limits == ctx.config.limits
            with self.lock:
                built = self.prebuilt.pop(job.id, None)
            return runner.evaluate_pair(plan, job_ctx, built, starter if shared else None)
        except UserError as exc:
            return failure("problem", job.id, Status.HARNESS_ERROR, f"bad job: {exc}")
        except Exception as exc:  # the service outlives any one job
            return failure("problem", job.id, Status.HARNESS_ERROR, f"{type(exc).__name__}: {exc}")

    def pair_of(self, job: Job) -> discover.Pair:
        """The job's problem and candidate as files under the state folder."""
        folder = self.state_dir / "sources" / job.id
        if "class Model" in job.problem:
            problem_path = api.as_file(job.problem, folder, "problem", "class Model")
        elif Path(job.problem).is_absolute() or ".." in Path(job.problem).parts:
            raise UserError("a problem is a name under problems/ (no absolute path, no ..) or a Model's source")
        else:
            problem_path = discover.resolve_problem(job.problem)[0].resolve()
        candidate_path = api.as_file(job.candidate, folder, "candidate", "class ModelNew")
        discover.check_overrides([problem_path], dict(job.options.get("sizes") or {}))
        return discover.Pair(problem_path.stem, problem_path, f"{candidate_path.stem}_{job.id}", candidate_path,
                             dict(job.options.get("sizes") or {}))

    def job_config(self, job: Job) -> Config:
        """A job's own options over the service's settings (precision, mode, preset, settings); a UserError if bad."""
        options = job.options
        refused = sorted(set(options.get("settings") or {}) & set(SERVICE_ONLY))
        if refused:
            raise UserError(f"a job may not set {', '.join(refused)}: the service's own")
        chosen = {k: options[k] for k in ("precision", "mode", "preset") if options.get(k) is not None}
        return build_config(self.config_file, {**self.overrides, **(options.get("settings") or {}), **chosen})

    def context_for(self, job: Job, ctx: runner.RunContext) -> runner.RunContext:
        """The device's run context with the job's own settings."""
        job_ctx = runner.new_context(self.job_config(job), ctx.device, {}, ctx.run_dir, self.env)
        job_ctx.isolation = ctx.isolation
        return job_ctx

    def record(self, job: Job, result: Result) -> None:
        """The job's Result, written once (atomically: the job is done), then appended to the service's log."""
        payload = result.to_dict()
        store.write_atomic(self.state_dir / "results" / f"{job.id}.json", json.dumps(payload))
        store.append_jsonl(self.state_dir / "results.jsonl", {**payload, "job": job.id})
