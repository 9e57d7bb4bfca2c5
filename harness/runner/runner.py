"""A run's pairs judged: each planned once (code, resume key, skips, build stage), given to the run's scheduler, and its
Result appended (fsync) as it ends. One judge process per pair. Never touches CUDA."""
from __future__ import annotations

import dataclasses
import json
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional

from harness.runner import blocks, builds, environment, judges, schedulers
from harness.common import discover, protocol, records, stopping, store
from harness.common.config import Config, config_hash
from harness.common.devices import is_gpu
from harness.runner.environment import ROOT
from harness.common.records import Result, failure
from harness.common.verdict import Status
from harness.common.procs import make_undumpable
from harness.runner.schedulers import PlannedPair


@dataclass
class RunContext:
    """What every pair of a run shares."""

    config: Config
    device: str
    overrides: dict
    run_dir: Path
    secret: int
    build_root: Path
    devices: tuple = ()  # several GPUs: one evaluation at a time on each
    arch: Optional[str] = None  # compute capability, for the build stage
    executor: str = "local"  # or "ray"
    ray_address: Optional[str] = None  # None starts a local Ray cluster
    provenance: dict = dataclasses.field(default_factory=dict)  # versions stamped on every Result
    # flops_key -> (FLOPs, TF32 FLOPs) of one reference call, counted once a run: later judges skip the count.
    flops: dict = dataclasses.field(default_factory=dict)
    isolation: dict = dataclasses.field(default_factory=dict)  # environment.isolation
    min_speedup: Optional[float] = None  # --gate --min-speedup: a CI across it gets more rounds (gate_timing_s)


def pair_key(pair: discover.Pair, source: str, ctx: RunContext) -> str:
    """Problem sha (with --set), solution sha and config hash: what --resume matches on."""
    overrides = json.dumps(overrides_of(pair, ctx), sort_keys=True)
    problem_sha = discover.sha256_text(pair.problem_path.read_text() + overrides)
    cfg = config_hash(ctx.config.replace(device=ctx.device.partition(":")[0]))  # any GPU of the run's model
    return f"{pair.problem}:{problem_sha[:12]}:{pair.solution}:{discover.sha256_text(source)[:12]}:{cfg}"


def overrides_of(pair: discover.Pair, ctx: RunContext) -> dict:
    """The pair's --set values: the run's, and its manifest entry's over them."""
    return {**ctx.overrides, **pair.overrides}


def flops_key(pair: discover.Pair, ctx: RunContext) -> str:
    """A reference call's FLOPs depend on the problem file and its sizes."""
    return str(pair.problem_path) + json.dumps(overrides_of(pair, ctx), sort_keys=True)


def read_candidate(pair: discover.Pair) -> tuple[Optional[str], Optional[Result]]:
    """The candidate's code, or the Result that ends the pair before any process starts."""
    try:
        return discover.read_source(pair.solution_path), None
    except discover.ExtractError as exc:
        return None, failure(pair.problem, pair.solution, Status.COMPILE_ERROR, str(exc))
    except OSError as exc:
        return None, failure(pair.problem, pair.solution, Status.COMPILE_ERROR, f"cannot read candidate: {exc}")


def skip_for_device(pair: discover.Pair, source: str, device: str) -> Optional[Result]:
    """A `skipped` Result when the candidate cannot run on this device at all."""
    reason = discover.cpu_only(source) if is_gpu(device) else discover.needs_cuda(source)
    if reason is None:
        return None
    return failure(pair.problem, pair.solution, Status.SKIPPED, f"{reason}; device is {device}")


def plan_pairs(pairs: list, ctx: RunContext) -> list[PlannedPair]:
    """Each pair's code, resume key, early end and build-stage decision, decided once for any scheduler."""
    plans = []
    for index, pair in enumerate(pairs):
        source, early = read_candidate(pair)
        if early is None and source is not None:
            early = skip_for_device(pair, source, ctx.device)
        prebuild = (early is None and source is not None and builds.enabled(ctx.config, ctx.device)
                    and discover.builds_extension(source))
        plans.append(PlannedPair(index, pair, source, early, pair_key(pair, source or "", ctx), prebuild,
                                 build_dir(ctx, source or "")))
    return plans


def run_pairs(pairs: list, ctx: RunContext, resume: bool,
              on_stage: Callable[[discover.Pair, str], None] = lambda pair, stage: None,
              on_result: Callable[[discover.Pair, Result], None] = lambda pair, result: None) -> list[Result]:
    """Judge pairs not yet recorded, appending each Result as it ends; on_stage: "build", "queued", judge stages."""
    results_path = ctx.run_dir / "results.jsonl"
    done = {}
    if resume:
        done = {r.key: r for r in records.read_results(results_path)[0]}
    results, lock = {}, threading.Lock()

    def emit(plan: PlannedPair, result: Result) -> None:
        with lock:
            store.append_jsonl(results_path, result.to_dict())
            results[plan.index] = result
            on_result(plan.pair, result)

    todo = []
    for plan in plan_pairs(pairs, ctx):
        if plan.key in done:
            results[plan.index] = done[plan.key]
            on_result(plan.pair, done[plan.key])
        else:
            todo.append(plan)
    scheduler = schedulers.for_run(ctx.executor, evaluate_pair, evaluate_on_ray, prebuild_pair)
    scheduler.run(todo, ctx, emit, on_stage)
    return [results[i] for i in range(len(pairs)) if i in results]  # all of them, unless the run was stopped


def evaluate_pair(plan: PlannedPair, ctx: RunContext, prebuilt: Optional[builds.Prebuilt] = None,
                  starter: Optional[judges.JudgeStarter] = None,
                  on_stage: Callable[[str], None] = lambda stage: None) -> Result:
    """Judge one pair in its own process (unless it ended early or in its build stage); one Result."""
    started = time.monotonic()
    pair, source, early = plan.pair, plan.source, plan.early
    if early is None and prebuilt is not None and prebuilt.result is not None:  # its build failed
        early = failure(pair.problem, pair.solution, Status(prebuilt.result.status),
                        prebuilt.result.error or "")
    if early is None:
        assert source is not None  # read_candidate gives a source wherever it gives no early end
        result = hand_to_judge(pair, source, ctx, starter, on_stage)
    else:
        result = early
    if prebuilt is not None:
        prebuilt.add_to(result)
    result.backend = result.backend or (discover.backend_of(source) if source else None)
    result.precision = result.precision or ctx.config.precision
    result.preset = None if ctx.config.preset == "default" else ctx.config.preset
    result.key, result.device = plan.key, result.device or ctx.device
    result.overrides = overrides_of(pair, ctx) or None
    result.problem_path, result.solution_path = relative(pair.problem_path), relative(pair.solution_path)
    result.wall_s = round(time.monotonic() - started, 3)
    if result.gpu is None and ctx.provenance.get("gpus"):  # ended before a judge
        result.gpu = environment.gpu_of(ctx.device, ctx.provenance)
    result.torch_version = ctx.provenance.get("torch")
    result.cuda_version = ctx.provenance.get("cuda_version")
    result.harness = ctx.provenance.get("harness")
    result.finished_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return result


def evaluate_on_ray(plan: PlannedPair, ctx: RunContext, built: Optional[builds.Prebuilt]) -> Result:
    """One evaluation in a Ray task; Ray hands the task its GPU as cuda:0 (CUDA_VISIBLE_DEVICES)."""
    device = "cuda:0" if is_gpu(ctx.device) else "cpu"
    return evaluate_pair(plan, dataclasses.replace(ctx, device=device, devices=()), built)


def hand_to_judge(pair: discover.Pair, source: str, ctx: RunContext, starter: Optional[judges.JudgeStarter] = None,
                  on_stage: Callable[[str], None] = lambda stage: None) -> Result:
    """Give the pair to a judge process (`python -m harness.judge.judge`) and follow it to its Result."""
    stem = f"{pair.problem}__{pair.solution}"
    log_dir = ctx.run_dir / "logs"
    flops, tf32_flops = ctx.flops.get(flops_key(pair, ctx), (None, None))
    job = protocol.PairJob(
        problem=pair.problem, problem_path=str(pair.problem_path), solution=pair.solution,
        solution_path=str(pair.solution_path), solution_source=source, overrides=overrides_of(pair, ctx),
        device=ctx.device, config=ctx.config, secret=ctx.secret, log_path=str(log_dir / f"{stem}.worker.log"),
        build_dir=str(build_dir(ctx, source)), peaks_dir=str(under_root(ctx.config.scheduling.peaks_cache_dir)),
        min_speedup=ctx.min_speedup, flops=flops, tf32_flops=tf32_flops)
    starter = starter or judges.JudgeStarter(ctx, (), ahead=0)

    def judge(block: int) -> Result:
        """One block of the pair on a fresh judge and workers (blocks.py)."""
        started = time.monotonic()
        name = stem if block == 1 else f"{stem}.block{block}"
        this_block = dataclasses.replace(job, block=block, log_path=str(log_dir / f"{name}.worker.log"))
        one = judges.follow_pair(this_block, starter.take(ctx.device, confirming=block > 1), ctx.config, log_dir, name,
                                 on_stage, starter)
        one.wall_s = round(time.monotonic() - started, 3)
        return one

    result = blocks.judged_in_blocks(judge, ctx.config)
    if result.flops is not None:
        ctx.flops.setdefault(flops_key(pair, ctx), (result.flops, result.tf32_flops))
    return result


def prebuild_pair(plan: PlannedPair, ctx: RunContext) -> Optional[builds.Prebuilt]:
    """The build stage for one pair: its extension built in the build cache (a Result if that failed)."""
    pair = plan.pair
    if stopping.requested():  # the run was stopped: no new build
        return None
    assert plan.source is not None  # a pair is prebuilt only when its source builds an extension
    try:
        return builds.prebuild(pair.problem, pair.problem_path, pair.solution, pair.solution_path, plan.source,
                               overrides_of(pair, ctx), plan.build_dir, ctx.arch, ctx.config)
    except OSError:  # the stage only saves time: its own failure leaves the build to the evaluation
        return None


def under_root(path: str) -> Path:
    """A configured path, relative ones taken from the repository root."""
    return Path(path) if Path(path).is_absolute() else ROOT / path


def relative(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def build_dir(ctx: RunContext, source: str) -> Path:
    """Where a candidate's extensions are built: one folder per content of its source."""
    return builds.source_folder(ctx.build_root, source)


def new_context(config: Config, device: str, overrides: dict, run_dir: Path, env: dict,
                devices: tuple = ()) -> RunContext:
    """A run's shared state, with a fresh secret for the trial seeds (undumpable: kept from this user's processes)."""
    make_undumpable()
    gpu = environment.gpu_of(device, env) or "cpu"
    cache = under_root(config.builds.build_cache_dir)
    build_root = builds.toolchain_root(cache, env["torch"], env["cuda_version"], gpu)
    run_dir.mkdir(parents=True, exist_ok=True)
    return RunContext(config, device, overrides, run_dir, secrets.randbits(63), build_root, tuple(devices),
                      environment.capability_of(device, env), provenance=environment.provenance(env))


def write_run_meta(ctx: RunContext, env: dict, argv: list) -> None:
    """meta.json of the run (environment.write_meta) with its config, device(s) and --set overrides."""
    environment.write_meta(ctx.run_dir, {"config": ctx.config.to_dict(), "device": ctx.device,
                                         "devices": list(ctx.devices),
                                         "overrides": ctx.overrides, "isolation": ctx.isolation}, env, argv)
