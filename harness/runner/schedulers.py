"""Where and when each pair of a run is judged, chosen once per run (`for_run`): local (one evaluation at a time per
device) or Ray tasks. Both take planned pairs and hand each Result to `emit` as it ends. Never imports torch."""
from __future__ import annotations

import dataclasses
import queue
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from harness.runner import builds, judges
from harness.common import clocks, discover, procs, stopping
from harness.common.devices import gpu_index, is_gpu
from harness.runner.environment import ROOT, UsageError
from harness.common.records import Result, failure
from harness.common.verdict import Status


@dataclass
class PlannedPair:
    """One pair as the runner hands it over: its code, its resume key, what is known before it runs."""

    index: int  # in the run's list of pairs
    pair: discover.Pair
    source: Optional[str]  # None when unreadable (`early` says why)
    early: Optional[Result]  # ends the pair before any process starts
    key: str
    prebuild: bool  # the build stage builds its extension
    build_dir: Path


Emit = Callable[[PlannedPair, Result], None]
OnStage = Callable[[discover.Pair, str], None]


class LocalScheduler:
    """Evaluations in this process's threads, one at a time per device; builds ahead in a process pool."""

    def __init__(self, evaluate: Callable, prebuild: Callable):
        self.evaluate, self.prebuild = evaluate, prebuild  # runner.evaluate_pair, runner.prebuild_pair

    def run(self, plans: list, ctx, emit: Emit, on_stage: OnStage) -> None:
        if not plans:  # a resumed run with every pair recorded: no judge to start
            return
        devices = ctx.devices or (ctx.device,)
        # Timing CPUs kept free from before any judge or build starts: they inherit it.
        with procs.timing_cpus_kept_free(physical_gpus(devices) if is_gpu(ctx.device) else ()):
            self.run_pairs(plans, devices, ctx, emit, on_stage)

    def run_pairs(self, plans: list, devices: tuple, ctx, emit: Emit, on_stage: OnStage) -> None:
        """Each pair's build, then its evaluation on the first free device."""
        free: queue.Queue = queue.Queue()
        for device in devices:
            free.put(device)
        gpu_run = is_gpu(ctx.device)
        ahead = ctx.config.scheduling.judges_ahead if gpu_run else 0
        starter = judges.JudgeStarter(ctx, devices, ahead=ahead, factory=True,
                                      pairs=sum(plan.early is None for plan in plans))
        build_pool = ThreadPoolExecutor(builds.pool_size(ctx.config)) if any(p.prebuild for p in plans) else None
        builds_by_folder = {}  # one build per source: pairs with the same source share it
        for plan in plans:
            if plan.prebuild and build_pool is not None and plan.build_dir not in builds_by_folder:
                builds_by_folder[plan.build_dir] = (build_pool.submit(self.prebuild, plan, ctx), plan.index)

        def judge(plan: PlannedPair) -> None:
            """One pair: its build, a device, its evaluation; nothing at all once the run is stopped."""
            if stopping.requested():
                return
            built = None
            if plan.prebuild:
                on_stage(plan.pair, "build")
                future, builder = builds_by_folder[plan.build_dir]
                built = future.result()
                if built is not None and builder != plan.index:  # another pair's build: only its verdict is shared
                    built = dataclasses.replace(built, build_s=0.0, wall_s=0.0)
            on_stage(plan.pair, "queued")
            device = free.get()
            try:
                stopping.check()
                result = self.evaluate(plan, dataclasses.replace(ctx, device=device), built, starter,
                                       lambda stage: on_stage(plan.pair, stage))
            except stopping.Interrupted:
                return
            finally:
                free.put(device)
            emit(plan, result)

        try:
            with ThreadPoolExecutor(max_workers=len(devices)) as pool:
                for future in [pool.submit(judge, plan) for plan in plans]:
                    future.result()
        finally:
            starter.close()
            if build_pool:
                build_pool.shutdown(cancel_futures=True)


def physical_gpus(devices: tuple) -> set:
    """NVML numbers of this run's GPUs and every other GPU NVML sees (other runs' pairs time there too)."""
    return {clocks.physical_index(gpu_index(d)) for d in devices} | set(range(clocks.machine_gpus(0)))


class RayScheduler:
    """The same stages as Ray tasks; on the CPU an evaluation holds a whole node (two timed ones would disturb)."""

    def __init__(self, evaluate: Callable, prebuild: Callable):
        self.evaluate, self.prebuild = evaluate, prebuild  # runner.evaluate_on_ray, runner.prebuild_pair

    def run(self, plans: list, ctx, emit: Emit, on_stage: OnStage) -> None:
        if not plans:  # a resumed run with every pair recorded: no cluster to start
            return
        try:
            import ray
        except ImportError:
            raise UsageError("--executor ray needs Ray: pip install ray") from None
        # A cluster needs this checkout at the same path on every node.
        ray.init(address=ctx.ray_address, ignore_reinit_error=True, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
        build_task = ray.remote(num_cpus=1)(self.prebuild)
        node_cpus = min(node["Resources"].get("CPU", 1) for node in ray.nodes() if node["Alive"])
        evaluate_task = ray.remote(num_gpus=1, num_cpus=1)(self.evaluate) if is_gpu(ctx.device) else \
            ray.remote(num_cpus=max(1, int(node_cpus)))(self.evaluate)
        pending = {}
        for plan in plans:
            built = build_task.remote(plan, ctx) if plan.prebuild else None
            pending[evaluate_task.remote(plan, ctx, built)] = plan
        while pending:
            (ref,), _ = ray.wait(list(pending), num_returns=1)
            plan = pending.pop(ref)
            try:
                result = ray.get(ref)
            except Exception as exc:  # the task itself failed (a node lost, say): the pair still gets a Result
                result = failure(plan.pair.problem, plan.pair.solution, Status.HARNESS_ERROR, f"Ray task failed: {exc}")
                result.key = plan.key
            emit(plan, result)


def for_run(executor: str, evaluate: Callable, evaluate_on_ray: Callable, prebuild: Callable):
    """The run's scheduler, by --executor."""
    if executor == "ray":
        return RayScheduler(evaluate_on_ray, prebuild)
    return LocalScheduler(evaluate, prebuild)
