"""The harness as a library: `evaluate` one pair, or `evaluate_many` and get each Result as it ends, judged as
`run.py` judges them (a judge process per pair, both sides in workers of their own, the run's secret seeds)."""
from __future__ import annotations

import hashlib
import queue
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Iterable, Iterator, Optional, Union

from harness.common import discover
from harness.common.config import build_config
from harness.common.errors import UserError
from harness.common.records import Result
from harness.runner import environment, runner

Source = Union[str, Path]  # a file's path, or the file's text
_DONE = object()


def evaluate(problem: Source, candidate: Source, *, device: str = "auto", precision: Optional[str] = None,
             mode: Optional[str] = None, preset: Optional[str] = None, sizes: Optional[dict] = None,
             timeout: Optional[float] = None, config: Optional[str] = None, settings: Optional[dict] = None,
             out: Optional[Source] = None) -> Result:
    """One pair's Result. problem: a Model's file or source; candidate: a ModelNew's; preset: "rl" for reward loops
    (run.py's --preset); sizes: module constants to override (--set); config: a YAML file of settings, settings: a
    dict of them over it (both configs/default.yaml's keys); out: keep the run (results.jsonl, meta.json, logs) in
    this folder, else it is removed once judged."""
    return next(evaluate_many([(problem, candidate)], device=device, precision=precision, mode=mode, preset=preset,
                              sizes=sizes, timeout=timeout, config=config, settings=settings, out=out))


def evaluate_many(pairs: Iterable[tuple[Source, Source]], *, device: str = "auto", devices: Optional[str] = None,
                  precision: Optional[str] = None, mode: Optional[str] = None, preset: Optional[str] = None,
                  sizes: Optional[dict] = None, timeout: Optional[float] = None, config: Optional[str] = None,
                  settings: Optional[dict] = None, out: Optional[Source] = None) -> Iterator[Result]:
    """Each (problem, candidate) pair's Result as it ends (not in the given order); devices: run.py's --devices
    ("all", "0,1"): the pairs spread over those GPUs. Closing the iterator early lets the pairs under way finish."""
    chosen = build_config(config, {**(settings or {}), "device": device, "timeout": timeout, "precision": precision,
                                   "mode": mode, "preset": preset})
    run_dir = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="harness-evaluate-"))
    try:
        found = written_pairs(list(pairs), run_dir / "sources")
        overrides = dict(sizes or {})
        discover.check_overrides(sorted({p.problem_path for p in found}), overrides)
        env = environment.probe_environment("auto" if devices else chosen.device)
        gpus = environment.resolve_devices(devices, env) if devices else []
        where = gpus[0] if gpus else environment.resolve_device(chosen.device, env)
        ctx = runner.new_context(chosen, where, overrides, run_dir / "run", env, tuple(gpus))
        ctx.isolation = environment.isolation(chosen, where)
        runner.write_run_meta(ctx, env, ["harness.evaluate_many"])
        yield from as_they_end(found, ctx)
    finally:
        if out is None:
            shutil.rmtree(run_dir, ignore_errors=True)


def as_they_end(pairs: list, ctx: runner.RunContext) -> Iterator[Result]:
    """The run's Results, yielded from the thread that judges them as each ends."""
    ended: queue.Queue = queue.Queue()
    failed: list = []

    def judge_all() -> None:
        try:
            runner.run_pairs(pairs, ctx, resume=False, on_result=lambda pair, result: ended.put(result))
        except BaseException as exc:  # handed to the caller
            failed.append(exc)
        finally:
            ended.put(_DONE)

    worker = threading.Thread(target=judge_all, name="harness-evaluate", daemon=True)
    worker.start()
    while (item := ended.get()) is not _DONE:
        yield item
    worker.join()
    if failed:
        raise failed[0]


def written_pairs(pairs: list, folder: Path) -> list[discover.Pair]:
    """Each (problem, candidate) as files: a path is used as it is, a source written under `folder`."""
    if not pairs:
        raise UserError("evaluate_many needs at least one (problem, candidate) pair")
    found = []
    for index, (problem, candidate) in enumerate(pairs):
        problem_path = as_file(problem, folder / "problems", "problem", "class Model")
        solution_path = as_file(candidate, folder / "solutions" / f"{index}", "candidate", "class ModelNew")
        found.append(discover.Pair(problem_path.stem, problem_path, f"{solution_path.stem}_{index}"
                                   if len(pairs) > 1 else solution_path.stem, solution_path))
    return found


def as_file(source: Source, folder: Path, role: str, needs: str) -> Path:
    """A path to an existing .py file, or source text written to `folder` under a name from its hash."""
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and source.endswith(".py")):
        path = Path(source)
        if not path.is_file():
            raise UserError(f"The {role} file was not found: {path}")
        return path.resolve()
    if not isinstance(source, str) or needs not in source:
        raise UserError(f"The {role} must be a path to a .py file or Python source that defines `{needs[6:]}`")
    digest = hashlib.sha256(source.encode()).hexdigest()[:10]
    name = re.sub(r"\W", "_", f"{role}_{digest}")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(source)
    return path.resolve()
