"""The build stage: candidates that build an extension are imported ahead in CPU-only workers, so the build is cached
when a GPU takes the pair; a failed build is `compile_error`, any other failure is left to the evaluation.
The runner calls `prebuild`, which runs python -m harness.runner.builds < JOB.json (the runner never imports torch)."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from harness.common.config import Config
from harness.common.devices import is_gpu
from harness.common.discover import sha256_text
from harness.common.extensions import BUILD_STAGE, CUDA_ASKED, build_failure, candidate_build_env
from harness.common.records import Result, failure, one_line
from harness.common.verdict import Status
from harness.common.places import ROOT



def pool_size(cfg: Config) -> int:
    """build_workers, or half the cores, at most one per 4 GiB of available memory, at most 8."""
    if cfg.builds.build_workers:
        return cfg.builds.build_workers
    available_gib = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
    return max(1, min((os.cpu_count() or 2) // 2, int(available_gib // 4), 8))


def enabled(cfg: Config, device: str) -> bool:
    """prebuild: on, off, or auto (on for GPU runs; on the CPU, builds would disturb timings)."""
    return cfg.builds.prebuild == "on" or (cfg.builds.prebuild == "auto" and is_gpu(device))


@dataclass
class Prebuilt:
    """What the build stage did for one pair: the Result when the pair ended there, and its times."""

    result: Optional[Result] = None
    build_s: float = 0.0  # inside torch's extension builders
    wall_s: float = 0.0  # the builder process

    def add_to(self, result: Result) -> Result:
        """Count the stage's build time in the pair's compile_s, and its wall time in phases_s."""
        result.compile_s = round((result.compile_s or 0.0) + self.build_s, 3)
        result.phases_s = {**(result.phases_s or {}), "build_stage": round(self.wall_s, 3)}
        return result


@dataclass(frozen=True)
class BuildJob:
    """What a builder process imports: the candidate, with the problem's sizes and its file."""
    path: str
    source: str
    overrides: dict
    build_dir: str
    arch: Optional[str]  # TORCH_CUDA_ARCH_LIST, as the judge will ask for it
    config: dict  # Config.to_dict()
    problem_path: str


def prebuild(problem: str, problem_path: Path, solution: str, path: Path, source: str, overrides: dict,
             build_dir: Path, arch: Optional[str], cfg: Config) -> Prebuilt:
    """Build a candidate's extension in a builder process; its Result is set only when the pair ends here."""
    job = BuildJob(str(path), source, overrides, str(build_dir), arch, cfg.to_dict(), str(problem_path))
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "harness.runner.builds"], cwd=ROOT,
                              input=json.dumps(dataclasses.asdict(job)), capture_output=True, text=True,
                              timeout=builder_timeout(cfg))
        verdict = json.loads(proc.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return Prebuilt(wall_s=time.monotonic() - started)  # the evaluation will build (and judge) it
    done = Prebuilt(build_s=float(verdict.get("build_s") or 0.0), wall_s=time.monotonic() - started)
    if verdict.get("status") in (Status.COMPILE_ERROR.value, Status.TIMEOUT.value):
        done.result = failure(problem, solution, Status(verdict["status"]), f"build stage: {verdict['error']}")
    return done


def builder_timeout(cfg: Config) -> float:
    """A builder's last deadline (each request has its own): two workers, each building once (at import, in __init__
    or in forward) and waiting for the other two requests."""
    return 2 * (cfg.limits.compile_timeout + 2 * cfg.limits.timeout) + 120


def toolchain_root(cache_dir: Path, torch_version: str, cuda_version: Optional[str], gpu: str) -> Path:
    """Builds are reused only by the same torch, CUDA and GPU: one folder of the build cache for each."""
    toolchain = f"torch-{torch_version}-cuda-{cuda_version}-{gpu}"
    return Path(cache_dir) / "".join(c if c.isalnum() or c in ".-" else "_" for c in toolchain)


def source_folder(root: Path, source: str) -> Path:
    """Where one candidate's extensions are built: a folder per content of its source."""
    return Path(root) / sha256_text(source)[:16]


def build(job: BuildJob) -> dict:
    """Import (and perhaps construct, and call on meta tensors) the candidate in a CPU-only worker: {"build_s"}, or
    {"status", "error"}, or {}.
    One that built nothing there and asked torch.cuda.is_available() is tried once more in a worker that answers True
    (generations often build only when a GPU is there): what it builds then is built ahead; its failures are the
    judge's to find, since they may come of the pretence."""
    outcome, asked = attempt(job, pretend_gpu=False)
    if outcome.get("status") or outcome.get("build_s") or not asked:
        return outcome
    again, _ = attempt(job, pretend_gpu=True)
    return again if again.get("build_s") else {}


def forward_on_meta(sandbox, cfg: Config):
    """The constructed candidate called once on meta tensors, for a build in its forward: the Ok reply, or None if
    the call failed, hung or killed its worker (the meta device is not the GPU: the judge decides)."""
    from harness.common import channel
    from harness.judge.sandbox import WorkerFailure

    try:
        reply = sandbox.request("forward_on_meta", cfg.limits.timeout, build_grace=cfg.limits.compile_timeout)
    except WorkerFailure:
        return None
    return reply if isinstance(reply, channel.Ok) else None


def attempt(job: BuildJob, pretend_gpu: bool) -> tuple[dict, bool]:
    """build's outcome in one worker, and whether the candidate asked torch.cuda.is_available()."""
    from harness.common import channel
    from harness.judge.sandbox import Sandbox, WorkerFailure

    cfg = Config.from_dict(job.config)
    env = {**candidate_build_env(job.build_dir), BUILD_STAGE: "pretend" if pretend_gpu else "watch"}
    if job.arch and "TORCH_CUDA_ARCH_LIST" not in os.environ:
        env["TORCH_CUDA_ARCH_LIST"] = job.arch  # as the judge will ask, so it reuses this build
    sandbox = Sandbox({"CUDA_VISIBLE_DEVICES": ""}, cfg.limits.output_limit_bytes, cfg.limits.kill_grace_s)
    try:
        sandbox.greet("cpu", False, env)
        reply = sandbox.request("import", cfg.limits.compile_timeout, path=job.path, source=job.source,
                                module_name="candidate_module", overrides=job.overrides,
                                problem=[Path(job.problem_path).read_text(), job.problem_path])
        built_nothing = (isinstance(reply, channel.Ok) and isinstance(reply.payload, dict)
                         and not reply.payload.get("build_s"))
        init_args = problem_init_args(job) if built_nothing else None
        if init_args is not None:  # nothing was built at import: ModelNew(...) may build in __init__
            reply = sandbox.request("construct", cfg.limits.timeout + cfg.limits.compile_timeout, init_args=init_args,
                                    init_seed=cfg.correctness.init_seed, state_dict={})
            if isinstance(reply, channel.Ok) and isinstance(reply.payload, dict) and not reply.payload.get("build_s"):
                reply = forward_on_meta(sandbox, cfg) or reply  # nor in __init__: in forward, perhaps
    except WorkerFailure as exc:
        asked = CUDA_ASKED in sandbox.log.text()
        return ({"status": Status.TIMEOUT.value, "error": str(exc)} if exc.status == Status.TIMEOUT else {}), asked
    finally:
        sandbox.close()
    log = sandbox.log.text()
    asked = CUDA_ASKED in log
    if isinstance(reply, channel.Ok):
        return {"build_s": reply.payload.get("build_s", 0.0) if isinstance(reply.payload, dict) else 0.0}, asked
    summary = build_failure(reply.message, log)
    return ({"status": Status.COMPILE_ERROR.value, "error": one_line(summary)} if summary else {}), asked


def problem_init_args(job: BuildJob) -> Optional[list]:
    """The problem's constructor arguments (its own trusted code, on the CPU), or None if they cannot be had."""
    import torch

    from harness.common.inputs import init_inputs
    from harness.common.load import load_module

    try:
        problem = load_module(Path(job.problem_path).read_text(), job.problem_path, "problem_module",
                              job.overrides)
        with torch.device("cpu"):
            return init_inputs(problem)
    except Exception:
        return None


if __name__ == "__main__":
    print(json.dumps(build(BuildJob(**json.loads(sys.stdin.read())))))
