"""The orchestrator: one judge process per pair, results appended as each ends. Never touches CUDA."""
from __future__ import annotations

import dataclasses
import json
import platform
import queue
import secrets
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional

from harness import builds, discover, judges, store
from harness.config import config_hash
from harness.errors import UserError
from harness.records import Result, Status, failure
from harness.procs import make_undumpable

ROOT = Path(__file__).resolve().parent.parent
PROBE = """
import json, torch
cuda = torch.cuda.is_available()
print(json.dumps({"torch": torch.__version__, "cuda_version": torch.version.cuda, "cuda_available": cuda,
                  "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
                  "capabilities": ["%d.%d" % torch.cuda.get_device_capability(i)
                                   for i in range(torch.cuda.device_count())] if cuda else []}))
"""


class UsageError(UserError):
    """A request this machine cannot serve, such as --device cuda without a GPU (the CLI exits 2)."""


@dataclass
class RunContext:
    """What every pair of a run shares."""

    config: dict
    device: str
    overrides: dict
    run_dir: Path
    secret: int
    build_root: Path
    devices: tuple = ()  # with several GPUs: one evaluation at a time on each (else just `device`)
    arch: Optional[str] = None  # the GPU's compute capability, for builds made ahead of evaluation
    executor: str = "local"  # or "ray": the same stages as Ray tasks
    ray_address: Optional[str] = None  # an existing Ray cluster; None starts a local one
    provenance: dict = dataclasses.field(default_factory=dict)  # torch, CUDA and harness versions, for every Result


def probe_environment() -> dict:
    """torch and GPU facts, read in a child process so that this one never initialises CUDA."""
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise UsageError(f"could not import torch: {out.stderr.strip()[-500:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def resolve_device(requested: str, env: dict) -> str:
    """auto -> cuda:0 when a GPU is visible, else cpu; cuda -> cuda:0; a CUDA request without a GPU is a
    usage error. Always an indexed device: workers call torch.cuda.set_device, which needs one."""
    if requested == "auto":
        requested = "cuda" if env["cuda_available"] else "cpu"
    if requested.startswith("cuda"):
        if not env["cuda_available"]:
            raise UsageError(f"--device {requested}: no CUDA GPU is visible here (torch {env['torch']}); use --device cpu")
        index = int(requested.partition(":")[2] or 0)
        if index >= len(env["gpus"]):
            raise UsageError(f"--device {requested}: only {len(env['gpus'])} GPU(s) visible")
        return f"cuda:{index}"  # an explicit index: torch.cuda.set_device needs one
    return requested


def resolve_devices(spec: str, env: dict) -> list[str]:
    """--devices: "all", or indices / cuda:N names separated by commas; every one must be visible."""
    if not env["cuda_available"]:
        raise UsageError(f"--devices {spec}: no CUDA GPU is visible here (torch {env['torch']})")
    names = [f"cuda:{i}" for i in range(len(env["gpus"]))] if spec == "all" else \
        [resolve_device(d if d.startswith("cuda") else f"cuda:{d}", env) for d in spec.split(",") if d.strip()]
    if not names or len(set(names)) != len(names):
        raise UsageError(f"--devices {spec}: name each GPU once, e.g. --devices 0,1")
    models = {env["gpus"][int(n.partition(":")[2])] for n in names}
    if len(models) > 1:  # builds and timings are per GPU model: one run, one model
        raise UsageError(f"--devices {spec}: the GPUs differ ({', '.join(sorted(models))}); run each model separately")
    return names


def git_commit() -> Optional[str]:
    """The checkout's commit, or None outside a git repository."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def harness_version() -> str:
    """The git commit when harness/ is as committed there, else sha:<hash of harness/*.py> (a copy, or edits)."""
    commit = git_commit()
    if commit:
        try:
            clean = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "harness"], cwd=ROOT, timeout=10).returncode == 0
        except (OSError, subprocess.SubprocessError):
            clean = False
        if clean:
            return commit
    return f"sha:{harness_sha()}"


def harness_sha() -> str:
    """A hash of the harness's own source: provenance that survives a copy without .git."""
    files = sorted((ROOT / "harness").glob("*.py"))
    return discover.sha256_text("".join(f.name + f.read_text() for f in files))[:12]


def write_meta(ctx: RunContext, env: dict, argv: list) -> None:
    """meta.json: config, machine, versions and commit of the run, written once, atomically."""
    path = ctx.run_dir / "meta.json"
    if path.exists():
        return
    meta = {"config": ctx.config, "device": ctx.device, "devices": list(ctx.devices), "overrides": ctx.overrides,
            "argv": argv,
            "gpus": env["gpus"], "torch": env["torch"], "cuda_version": env["cuda_version"],
            "python": platform.python_version(), "platform": platform.platform(), "git_commit": git_commit(),
            "harness_sha": harness_sha(),
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    store.write_atomic(path, json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n")


def pair_key(pair: discover.Pair, source: str, ctx: RunContext) -> str:
    """Problem sha (with --set), solution sha and config hash: what --resume matches on."""
    problem_sha = discover.sha256_text(pair.problem_path.read_text() + json.dumps(ctx.overrides, sort_keys=True))
    cfg = config_hash({**ctx.config, "device": ctx.device.partition(":")[0]})  # any GPU of the run's model
    return f"{pair.problem}:{problem_sha[:12]}:{pair.solution}:{discover.sha256_text(source)[:12]}:{cfg}"


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
    reason = discover.needs_cuda(source) if device == "cpu" else discover.cpu_only(source)
    if reason is None:
        return None
    return failure(pair.problem, pair.solution, Status.SKIPPED, f"{reason}; device is {device}")


def evaluate_pair(pair: discover.Pair, source: Optional[str], early: Optional[Result], key: str,
                  ctx: RunContext, prebuilt: Optional[builds.Prebuilt] = None,
                  starter: Optional[judges.JudgeStarter] = None,
                  on_stage: Callable[[str], None] = lambda stage: None) -> Result:
    """Judge one pair in its own process (unless `early` or its build stage already ended it); one Result."""
    started = time.monotonic()
    if early is None and prebuilt is not None and prebuilt.result is not None:  # its build failed
        early = failure(pair.problem, pair.solution, Status(prebuilt.result.status), prebuilt.result.error)
    if early is None:
        early = skip_for_device(pair, source, ctx.device)
    result = early or run_judge(pair, source, ctx, starter, on_stage)
    if prebuilt is not None:
        prebuilt.add_to(result)
    result.backend = result.backend or (discover.backend_of(source) if source else None)
    result.precision = result.precision or ctx.config["precision"]
    result.key, result.device = key, result.device or ctx.device
    result.problem_path, result.solution_path = relative(pair.problem_path), relative(pair.solution_path)
    result.wall_s = round(time.monotonic() - started, 3)
    if result.gpu is None and ctx.device.startswith("cuda") and ctx.provenance.get("gpus"):  # ended before a judge
        result.gpu = ctx.provenance["gpus"][int(ctx.device.partition(":")[2] or 0)]
    result.torch_version = ctx.provenance.get("torch")
    result.cuda_version = ctx.provenance.get("cuda_version")
    result.harness = ctx.provenance.get("harness")
    result.finished_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return result


def run_judge(pair: discover.Pair, source: str, ctx: RunContext, starter: Optional[judges.JudgeStarter] = None,
              on_stage: Callable[[str], None] = lambda stage: None) -> Result:
    """Give the pair to a judge process (`python -m harness.judge`) and follow it to its Result."""
    stem = f"{pair.problem}__{pair.solution}"
    log_dir = ctx.run_dir / "logs"
    job = {"problem": pair.problem, "problem_path": str(pair.problem_path), "solution": pair.solution,
           "solution_path": str(pair.solution_path), "solution_source": source, "overrides": ctx.overrides,
           "device": ctx.device, "config": ctx.config, "secret": ctx.secret,
           "log_path": str(log_dir / f"{stem}.worker.log"),
           "build_dir": str(build_dir(ctx, source)),
           "peaks_dir": str(under_root(ctx.config["peaks_cache_dir"]))}
    judge = (starter or judges.JudgeStarter(ctx, (), ahead=0)).take(ctx.device)
    return judges.run_judge(job, judge, ctx.config, log_dir, stem, on_stage)


def under_root(path: str) -> Path:
    """A configured path, relative ones taken from the repository root."""
    return Path(path) if Path(path).is_absolute() else ROOT / path


def relative(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def run_pairs(pairs: list, ctx: RunContext, resume: bool,
              on_stage: Callable[[discover.Pair, str], None] = lambda pair, stage: None,
              on_result: Callable[[discover.Pair, Result], None] = lambda pair, result: None) -> list[Result]:
    """Evaluate every pair not already recorded; append each Result (fsync) as it ends.

    `on_stage(pair, stage)` follows a pair: "build" (waiting for its build stage), "queued" (for a device),
    then the judge's stages (judges.stage_deadlines); `on_result(pair, result)` runs as each pair ends.

    With several devices, one evaluation runs at a time on each; results are appended as they end
    (so their order may differ from a one-device run, their content does not) and returned in `pairs` order.
    """
    results_path = ctx.run_dir / "results.jsonl"
    done = {}
    if resume:
        records, _ = store.read_jsonl(results_path)
        done = {r.get("key"): Result.from_dict(r) for r in records}
    results, lock = {}, threading.Lock()
    free = queue.Queue()
    for device in ctx.devices or (ctx.device,):
        free.put(device)
    candidates = [read_candidate(pair) for pair in pairs]
    keys = [pair_key(pair, source or "", ctx) for pair, (source, _) in zip(pairs, candidates)]
    build_stage = builds.enabled(ctx.config, ctx.device) and ctx.executor == "local"  # Ray runs its own
    build_pool = ThreadPoolExecutor(builds.pool_size(ctx.config)) if build_stage else None
    gpu_run = ctx.device.startswith("cuda") and ctx.executor == "local"
    starter = judges.JudgeStarter(ctx, ctx.devices or (ctx.device,), ahead=ctx.config["judges_ahead"] if gpu_run else 0)
    prebuilt, by_folder = {}, {}  # one build per source: pairs with the same source share it
    for i, (pair, (source, early)) in enumerate(zip(pairs, candidates)):
        if build_pool and keys[i] not in done and early is None and builds.builds_extension(source) \
                and skip_for_device(pair, source, ctx.device) is None:
            folder = build_dir(ctx, source)
            first = folder not in by_folder
            if first:
                by_folder[folder] = build_pool.submit(prebuild_pair, pair, source, ctx)
            prebuilt[i] = (by_folder[folder], first)

    def judge(index: int, pair: discover.Pair) -> None:
        (source, early), key = candidates[index], keys[index]
        if key in done:
            result = done[key]
        else:
            built = None
            if index in prebuilt:
                on_stage(pair, "build")
                future, first = prebuilt[index]
                built = future.result()
                if built is not None and not first:  # the build is another pair's: only its verdict is shared
                    built = dataclasses.replace(built, build_s=0.0, wall_s=0.0)
            on_stage(pair, "queued")
            device = free.get()
            try:
                result = evaluate_pair(pair, source, early, key, dataclasses.replace(ctx, device=device), built, starter,
                                       lambda stage: on_stage(pair, stage))
            finally:
                free.put(device)
        with lock:
            if key not in done:
                store.append_jsonl(results_path, result.to_dict())
            results[index] = result
            on_result(pair, result)

    try:
        if ctx.executor == "ray":
            return run_pairs_on_ray(pairs, ctx, candidates, keys, done, on_stage, on_result)
        if free.qsize() == 1:
            for index, pair in enumerate(pairs):
                judge(index, pair)
        else:
            with ThreadPoolExecutor(max_workers=free.qsize()) as pool:
                for future in [pool.submit(judge, i, pair) for i, pair in enumerate(pairs)]:
                    future.result()
    finally:
        starter.close()
        if build_pool:
            build_pool.shutdown(cancel_futures=True)
    return [results[i] for i in range(len(pairs))]


def run_pairs_on_ray(pairs: list, ctx: RunContext, candidates: list, keys: list, done: dict,
                     on_stage: Callable, on_result: Callable) -> list[Result]:
    """The same stages as Ray tasks: builds on CPUs, each evaluation holding a GPU (on the CPU: a whole node,
    since two timed evaluations on one CPU would disturb each other). Results are appended as tasks end."""
    try:
        import ray
    except ImportError:
        raise UsageError("--executor ray needs Ray: pip install ray") from None
    # Workers import the harness from this checkout (on a cluster: the same path on every node).
    ray.init(address=ctx.ray_address, ignore_reinit_error=True, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    gpu = ctx.device.startswith("cuda")
    build_task = ray.remote(num_cpus=1)(prebuild_pair)
    node_cpus = min(node["Resources"].get("CPU", 1) for node in ray.nodes() if node["Alive"])
    evaluate_task = ray.remote(num_gpus=1, num_cpus=1)(evaluate_on_ray) if gpu else \
        ray.remote(num_cpus=max(1, int(node_cpus)))(evaluate_on_ray)
    results, pending = {}, {}
    for index, pair in enumerate(pairs):
        (source, early), key = candidates[index], keys[index]
        if key in done:
            results[index] = done[key]
            continue
        built = None
        if builds.enabled(ctx.config, ctx.device) and early is None and builds.builds_extension(source) \
                and skip_for_device(pair, source, ctx.device) is None:
            built = build_task.remote(pair, source, ctx)
        pending[evaluate_task.remote(pair, source, early, key, ctx, built)] = index
    results_path = ctx.run_dir / "results.jsonl"
    while pending:
        (ref,), _ = ray.wait(list(pending), num_returns=1)
        index = pending.pop(ref)
        try:
            result = ray.get(ref)
        except Exception as exc:  # the task itself failed (a node lost, say): the pair still gets a Result
            result = failure(pairs[index].problem, pairs[index].solution, Status.HARNESS_ERROR,
                             f"Ray task failed: {exc}")
            result.key = keys[index]
        store.append_jsonl(results_path, result.to_dict())
        results[index] = result
        on_result(pairs[index], result)
    return [results[i] for i in range(len(pairs))]


def evaluate_on_ray(pair: discover.Pair, source: Optional[str], early: Optional[Result], key: str,
                    ctx: RunContext, built: Optional[builds.Prebuilt]) -> Result:
    """One evaluation in a Ray task; Ray hands the task its GPU as cuda:0 (CUDA_VISIBLE_DEVICES)."""
    device = "cuda:0" if ctx.device.startswith("cuda") else "cpu"
    return evaluate_pair(pair, source, early, key, dataclasses.replace(ctx, device=device, devices=()), built)


def prebuild_pair(pair: discover.Pair, source: str, ctx: RunContext) -> Optional[builds.Prebuilt]:
    """The build stage for one pair: its extension built in the build cache (with a Result if that failed)."""
    try:
        return builds.prebuild(pair.problem, pair.problem_path, pair.solution, pair.solution_path, source, ctx.overrides,
                               build_dir(ctx, source), ctx.arch, ctx.config)
    except OSError:  # the stage only saves time: its own failure leaves the build to the evaluation
        return None


def build_dir(ctx: RunContext, source: str) -> Path:
    """Where a candidate's extensions are built: one folder per content of its source."""
    return builds.source_folder(ctx.build_root, source)


def new_context(config: dict, device: str, overrides: dict, run_dir: Path, env: dict,
                devices: tuple = ()) -> RunContext:
    """A run's shared state, with a fresh secret for the trial seeds (kept from this user's other processes)."""
    make_undumpable()
    gpu = env["gpus"][int(device.partition(":")[2] or 0)] if device.startswith("cuda") else "cpu"
    build_root = builds.toolchain_root(under_root(config["build_cache_dir"]), env["torch"], env["cuda_version"], gpu)
    run_dir.mkdir(parents=True, exist_ok=True)
    arch = env.get("capabilities", [None] * len(env["gpus"]))[int(device.partition(":")[2] or 0)] \
        if device.startswith("cuda") else None
    provenance = {"torch": env["torch"], "cuda_version": env["cuda_version"], "harness": harness_version(),
                  "gpus": env["gpus"]}
    return RunContext(config, device, overrides, run_dir, secrets.randbits(63), build_root, tuple(devices), arch,
                      provenance=provenance)
