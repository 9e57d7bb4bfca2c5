"""Command line: python run.py --problem sigmoid [...]; run.py list | report DIR | compare OLD NEW | lint."""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Optional

from rich.console import Console
from rich.markup import escape
from rich.live import Live
from rich.table import Table

from harness.runner import boards, environment, gate, report, runner
from harness.common import discover, records, stopping, store
from harness.common.config import build_config, presets
from harness.common.devices import is_gpu
from harness.common.errors import UserError
from harness.common.records import Result
from harness.common.verdict import Status

EXAMPLES = """examples:
  python run.py --problem sigmoid                       every candidate in solutions/sigmoid/
  python run.py --problem sigmoid --device cpu --set batch_size=32 --set dim=2048
  python run.py --problem hardsigmoid --solution my_kernel.py --out results/try1
  python run.py --problem sigmoid --solution answer.md  an LLM response: its last ModelNew code block
  python run.py --problem sigmoid --gate --min-speedup 1.0   exit 1 unless every candidate passes
  python run.py --problems-root KernelBench/KernelBench --solution runs/model_a/
                                                        each level_L_problem_P_sample_S_kernel.py with its problem
  python run.py --problem 21_Sigmoid --problems-root KernelBench/KernelBench --precision bf16 --set batch_size=64
  python run.py list                                    problems, their constants and candidates
  python run.py --problem sigmoid --gate --baseline results/leaderboards/h100/leaderboard.csv --junit junit.xml
  python run.py report results/RUN                      rebuild the tables and plots of a run from results.jsonl
  python run.py compare results/OLD results/NEW         per-pair changes in status and speedup

exit status: 0 the evaluation ran (whatever the verdicts); 1 --gate failed; 2 usage or config error;
             3 with --gate, the harness itself failed on a pair (harness_error): the run cannot vouch for it.
statuses: correct, incorrect, compile_error, runtime_error, timeout, crash, skipped (with the reason);
          harness_error is the harness's own failure, never the candidate's."""


def run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="run.py", description="Check and time candidate kernels (ModelNew) against reference problems (Model).",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", action="append", default=[], metavar="NAME_OR_PATH",
                        help="problem name (problems/NAME.py, or e.g. 21_Sigmoid anywhere under --problems-root), "
                             "file or directory (recursive); repeatable")
    parser.add_argument("--problems-root", metavar="DIR",
                        help="a problem tree such as KernelBench's (level1/, level2/, ...): names resolve there, and "
                             "--solution files named level_L_problem_P_sample_S_kernel.py find their own problem")
    parser.add_argument("--manifest", metavar="FILE", help="CSV (problem,candidate) or YAML list of pairs to judge")
    parser.add_argument("--precision", choices=["fp32", "fp16", "bf16"],
                        help="cast float inputs and both models' weights to this dtype (default from config: fp32)")
    parser.add_argument("--preset", choices=presets(),
                        help="settings layered under --config and the flags: rl, fewer trials and rounds for reward "
                             "loops, every defence kept, a wider CI (configs/presets/)")
    parser.add_argument("--mode", choices=["constructed", "eval"],
                        help="modules as constructed (default: KernelBench's, training mode, BatchNorm on batch "
                             "statistics) or eval (inference; BatchNorm statistics drawn at random)")
    parser.add_argument("--solution", action="append", metavar="PATH",
                        help="candidate file (.py, or a .txt/.md LLM response) or folder of them; "
                             "default: solutions/<problem>/*")
    parser.add_argument("--device", help="auto (default), cpu, cuda or cuda:N")
    parser.add_argument("--devices", metavar="LIST",
                        help="several GPUs of one model, one evaluation at a time on each: 0,1 or all")
    parser.add_argument("--executor", choices=["local", "ray"], default="local",
                        help="local (default) or ray: builds and evaluations as Ray tasks")
    parser.add_argument("--ray-address", metavar="ADDR",
                        help="with --executor ray: an existing cluster (default: start a local one)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a module constant of the problem and candidate, e.g. --set batch_size=32")
    parser.add_argument("--config", metavar="FILE", help="YAML config layered over configs/default.yaml")
    parser.add_argument("--timeout", type=float, metavar="S", help="seconds per worker request (default from config)")
    parser.add_argument("--out", metavar="DIR", help="run directory (default: results/<run-name>/)")
    parser.add_argument("--resume", action="store_true", help="skip pairs whose key is already in DIR/results.jsonl")
    parser.add_argument("--gate", action="store_true", help="exit 1 when any candidate is not correct or too slow")
    add_gate_arguments(parser)
    return parser


def fail(message: str) -> int:
    """A user's error, as one line on stderr (never wrapped at the terminal's width: a log is grepped), and exit 2."""
    Console(stderr=True, soft_wrap=True).print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    return 2


def add_gate_arguments(parser: argparse.ArgumentParser) -> None:
    """--min-speedup, --baseline and --junit (the CI options shared by a run and by report)."""
    parser.add_argument("--min-speedup", type=float, default=None, metavar="X", help="with --gate: minimum speedup")
    parser.add_argument("--baseline", metavar="FILE.csv",
                        help="with --gate: a leaderboard.csv; a candidate that got worse than its row there (no longer "
                             "correct, newly flagged so that every gate fails it, or slower beyond both confidence "
                             "intervals) fails; a row measured on another GPU model, precision, mode or sizes is not "
                             "comparable and is listed, as is a pair with no row")
    parser.add_argument("--fail-on-no-baseline", action="store_true",
                        help="with --baseline: a pair with no comparable row in it fails the gate")
    parser.add_argument("--fail-on-skip", action="store_true",
                        help="with --gate: a skipped pair (not judged here: a CUDA candidate on a CPU runner, a pair "
                             "too large for this machine) fails the gate; by default it passes, reported as skipped")
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML: one testcase per pair, failures = the gate's")


def main(argv=None) -> int:
    """Dispatch a subcommand or run an evaluation; the exit status. The one place a UserError is caught (exit 2)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return dispatch(argv)
    except UserError as exc:
        return fail(str(exc))
    # before a run starts (a run handles its own: harness.common.stopping), or in a subcommand
    except KeyboardInterrupt:
        Console(stderr=True).print("stopped (Ctrl-C)")
        return 130


def dispatch(argv: list) -> int:
    if argv[:1] == ["list"]:
        return list_command(argv[1:])
    if argv[:1] == ["report"]:
        return report_command(argv[1:])
    if argv[:1] == ["lint"]:
        return lint_command(argv[1:])
    if argv[:1] == ["compare"]:
        return compare_command(argv[1:])
    if argv[:1] == ["serve"]:
        from harness.runner.serve import serve_command  # FastAPI and uvicorn only here

        return serve_command(argv[1:])
    return evaluate(run_parser().parse_args(argv), argv)


def check_sizes_run(problem_paths: list, overrides: dict) -> None:
    """A UserError when --set values make a problem raise (on the meta device) where it did not without them."""
    if not overrides:
        return
    from harness.common import problem_info

    for path in problem_paths:
        raised = problem_info.broken_by(path, overrides)
        if raised:
            given = " ".join(f"--set {name}={value!r}" for name, value in overrides.items())
            raise UserError(f"{given}: problem '{Path(path).stem}' does not run with it: {raised}"[:500])


def evaluate(args, argv: list) -> int:
    """Resolve pairs and config, run every pair, print the table."""
    config = build_config(args.config, {"device": args.device, "timeout": args.timeout, "precision": args.precision,
                                        "mode": args.mode, "preset": args.preset})
    check_gate_arguments(args)
    overrides = discover.parse_set(args.set)
    pairs = discover.find_pairs(args.problem, args.solution, args.problems_root, args.manifest)
    discover.check_overrides(sorted({p.problem_path for p in pairs}), overrides)
    check_sizes_run(sorted({p.problem_path for p in pairs}), overrides)
    if args.resume and not args.out:
        raise UserError("--resume needs --out DIR (the run to resume)")
    if args.ray_address and args.executor != "ray":
        raise UserError("--ray-address needs --executor ray")
    if args.out:
        check_out(Path(args.out), args.resume)
    env = environment.probe_environment("auto" if args.devices else config.device)
    devices = environment.resolve_devices(args.devices, env) if args.devices else []
    device = devices[0] if devices else environment.resolve_device(config.device, env)
    results_dir = Path(config.scheduling.results_dir)
    run_dir = Path(args.out) if args.out else new_run_dir(results_dir, sorted({p.problem for p in pairs}))
    ctx = runner.new_context(config, device, overrides, run_dir, env, tuple(devices))
    ctx.executor, ctx.ray_address = args.executor, args.ray_address
    ctx.min_speedup = args.min_speedup if args.gate else None
    ctx.isolation = environment.isolation(config, device)
    runner.write_run_meta(ctx, env, argv)
    console = report.wide_console()
    gpus = f" ({', '.join(env['gpus']) or 'no GPU'})" if is_gpu(device) else ""
    console.print(f"{len(pairs)} pair(s) on [bold]{', '.join(devices) or device}[/]{gpus}, torch {env['torch']} -> "
                  f"{run_dir}/",
                  highlight=False)
    for line in environment.missing_isolation(ctx.isolation):
        console.print(f"[yellow]isolation missing: {line}[/]", highlight=False)
    if args.resume:
        recorded, torn = records.read_results(run_dir / "results.jsonl")
        console.print(f"resuming: {len(recorded)} result(s) recorded" +
                      (f"; [yellow]{torn} torn or unreadable line(s) ignored (those pairs run again)[/]" if torn
                       else ""))
    stopping.install()  # from here a Ctrl-C or SIGTERM stops the run cleanly (a second one at once)
    results = run_with_progress(pairs, ctx, args.resume, console)
    report.print_summary(results, run_dir, console)
    if stopping.requested():
        publish(run_dir, load_results(run_dir), results, args, complete=False)
        console.print(f"[yellow]stopped by {stopping.signal_name()}: {len(results)} of {len(pairs)} pair(s) recorded, "
                      f"the tables made from them; the rest recorded nothing. To judge them:[/]\n  "
                      f"{resume_command(argv, run_dir)}", highlight=False, soft_wrap=True)
        return stopping.exit_code()
    return publish(run_dir, load_results(run_dir), results, args)


def resume_command(argv: list, run_dir: Path) -> str:
    """The command that finishes a stopped run: the same arguments, with --out its folder and --resume."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--out":
            skip = True
        elif not arg.startswith("--out=") and arg != "--resume":
            kept.append(arg)
    return shlex.join(["python", "run.py", *kept, "--out", str(run_dir), "--resume"])


def run_with_progress(pairs: list, ctx, resume: bool, console: Console) -> list[Result]:
    """Run the pairs with a live view: pairs done and left, and each running pair's stage and its time there."""
    view = RunView(len(pairs))

    def finished(pair, result):
        judged = view.end(pair)
        console.print(f"  [{view.done}/{view.total}{view.estimate()}] {result.problem}/{result.solution}: "
                      f"{report.outcome(result)}" + ("" if judged else " (recorded before)"), highlight=False)
        report.write_tables(ctx.run_dir, load_results(ctx.run_dir))

    if not console.is_terminal:  # logs (CI, a remote run): no live view, but a line when a stage lasts long
        with StallReporter(view, console):
            return runner.run_pairs(pairs, ctx, resume, view.stage, finished)
    with Live(view, console=console, refresh_per_second=2, transient=True):
        return runner.run_pairs(pairs, ctx, resume, view.stage, finished)


class RunView:
    """What runs now: pairs done and left, and per running pair its stage, time in that stage and in all."""

    def __init__(self, total: int):
        self.total, self.done, self.judged = total, 0, 0
        self.started = time.monotonic()
        # when the first judge of this run began (the pace: pairs a judge ended)
        self.first_start: Optional[float] = None
        self.seen: set[tuple[str, str]] = set()  # pairs this run handled
        self.with_judge: set[tuple[str, str]] = set()  # those a judge took
        self.running: dict[tuple[str, str], list] = {}  # (problem, solution) -> [stage, stage started, pair started]
        self.lock = threading.Lock()

    def stage(self, pair, stage: str) -> None:
        now = time.monotonic()
        with self.lock:
            entry = self.running.setdefault((pair.problem, pair.solution), [stage, now, now])
            entry[0], entry[1] = stage, now
            self.seen.add((pair.problem, pair.solution))
            if stage not in ("build", "queued"):  # a judge has it: skips and failed builds end in no time
                self.with_judge.add((pair.problem, pair.solution))
                self.first_start = self.first_start or now

    def end(self, pair) -> bool:
        """A pair is done; True when this run judged it (False: recorded by an earlier run, --resume)."""
        with self.lock:
            self.running.pop((pair.problem, pair.solution), None)
            self.done += 1
            self.judged += (pair.problem, pair.solution) in self.with_judge
            return (pair.problem, pair.solution) in self.seen

    def estimate(self) -> str:
        """', ~N min left' from the pace of pairs a judge ended ('' before the second: one says little of the next)."""
        left = self.total - self.done
        if self.judged < 2 or not left or self.first_start is None:
            return ""
        seconds = (time.monotonic() - self.first_start) / self.judged * left
        return f", ~{seconds / 60:.0f} min left" if seconds >= 90 else f", ~{seconds:.0f} s left"

    def rows(self) -> list:
        """(pair name, stage, seconds in stage, seconds in all) of each running pair."""
        now = time.monotonic()
        with self.lock:
            return [(f"{problem}/{solution}", stage, now - since, now - began)
                    for (problem, solution), (stage, since, began) in sorted(self.running.items())]

    def __rich__(self):
        table = Table.grid(padding=(0, 2))
        table.add_row(f"[bold]{self.done}/{self.total} pairs done, {self.total - self.done} left{self.estimate()}[/]",
                      "",
                      f"{time.monotonic() - self.started:.0f} s", "")
        for name, stage, in_stage, in_all in self.rows():
            table.add_row(f"  {name}", stage, f"{in_stage:.0f} s in stage", f"{in_all:.0f} s in all")
        return table


class StallReporter:
    """On a console that is no terminal: a line for each stage that has lasted 60 s, then 120, 240, ..."""

    def __init__(self, view: RunView, console: Console, first_s: float = 60.0, every_s: float = 5.0):
        self.view, self.console, self.first_s, self.every_s = view, console, first_s, every_s
        self.told: dict = {}  # (pair, stage) -> seconds last reported
        self.stop = threading.Event()

    def __enter__(self):
        threading.Thread(target=self.watch, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.stop.set()

    def watch(self) -> None:
        while not self.stop.wait(self.every_s):
            for name, stage, in_stage, in_all in self.view.rows():
                last = self.told.get((name, stage), self.first_s / 2)
                if in_stage >= 2 * last:
                    self.told[(name, stage)] = in_stage
                    self.console.print(f"  {name}: in stage '{stage}' for {in_stage:.0f} s ({in_all:.0f} s in all; "
                                       f"{self.view.done}/{self.view.total} pairs done)", highlight=False)


def load_results(run_dir: Path) -> list[Result]:
    """The run's results.jsonl as Results, the last record of each key winning."""
    return latest_results(records.read_results(Path(run_dir) / "results.jsonl")[0])


def latest_results(results: list[Result]) -> list[Result]:
    """The last Result of each key."""
    return list({r.key or id(r): r for r in results}.values())


def check_gate_arguments(args) -> None:
    """The gate's options only mean something with --gate (a usage error otherwise); the baseline must exist."""
    if args.fail_on_no_baseline and not args.baseline:
        raise UserError("--fail-on-no-baseline needs --baseline")
    for name in ("min_speedup", "baseline", "fail_on_skip"):
        if getattr(args, name) not in (None, False) and not args.gate:
            raise UserError(f"--{name.replace('_', '-')} needs --gate")
    if args.baseline and not Path(args.baseline).is_file():
        raise UserError(f"--baseline {args.baseline}: no such file")
    # Read now, before any pair runs: a file that is no leaderboard is a usage error, not a wasted run.
    args.baseline_rows = gate.read_baseline(Path(args.baseline)) if args.baseline else None


def publish(run_dir: Path, recorded: list[Result], results: list[Result], args, complete: bool = True) -> int:
    """Boards of every recorded pair; JUnit and step summary on request; the gate's exit status for `results`."""
    boards.write_boards(run_dir, recorded, read_meta(run_dir))
    if not complete:
        return 0
    failures = gate.gate_failures(results, args.min_speedup, args.baseline_rows, args.fail_on_skip) if args.gate else \
        gate.gate_failures(results)  # JUnit without --gate: the pairs that are not correct fail
    lines, code = gate_verdict(results, failures, args) if args.gate else ([], 0)
    if args.junit:
        store.write_atomic(Path(args.junit), gate.junit_xml(results, failures))
    if os.environ.get("GITHUB_STEP_SUMMARY"):  # GitHub Actions shows this file on the run's page
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a") as out:
            out.write(step_summary(run_dir, lines))
    console = Console(stderr=True)
    for line in lines:
        console.print(line, highlight=False, soft_wrap=True)
    return code


def gate_verdict(results: list[Result], failures: dict, args) -> tuple[list, int]:
    """The gate's lines and exit status; pairs with no comparable baseline row listed, or added to `failures`."""
    errors, lines = gate.harness_errors(results), []
    gaps = gate.baseline_gaps(results, args.baseline_rows) if args.baseline_rows is not None else {}
    for key, gap in sorted(gaps.items()):
        if key in failures:
            continue
        if args.fail_on_no_baseline:
            failures[key] = f"not compared with the baseline ({gap}; --fail-on-no-baseline)"
        else:
            lines.append(f"gate: {key[0]}/{key[1]}: not compared with the baseline: {gap}")
    lines += [f"gate: {problem}/{candidate}: {reason}" for (problem, candidate), reason in sorted(failures.items())]
    lines += [f"gate: {problem}/{candidate}: HARNESS ERROR (not the candidate's): {reason}"
              for (problem, candidate), reason in sorted(errors.items())]
    if errors:  # the run cannot vouch for these pairs either way
        return lines + [f"gate: ERROR: the harness failed on {len(errors)} of {len(results)} pair(s)"], 3
    skipped = sum(r.status == Status.SKIPPED and (r.problem, r.solution) not in failures for r in results)
    lines.append(f"gate: {'FAILED' if failures else 'passed'} ({len(failures)} of {len(results)} pair(s) failing"
                 + (f"; {skipped} skipped, not judged here (--fail-on-skip fails them)" if skipped else "") + ")")
    return lines, 1 if failures else 0


def step_summary(run_dir: Path, gate_lines: list) -> str:
    """summary.md for GitHub's step summary (plots named, not linked: it cannot show the run's files) and the gate."""
    text = re.sub(r"!\[([^\]]*)\]\(([^)]+)\)", r"_\1: `\2` in the run's folder (keep it as an artifact)_",
                  (Path(run_dir) / "summary.md").read_text())
    if gate_lines:
        text += "\n```\n" + "\n".join(gate_lines) + "\n```\n"
    return text + "\n"


def read_meta(run_dir: Path) -> dict:
    """A run's meta.json, or {} (report works from results.jsonl alone)."""
    try:
        return json.loads((Path(run_dir) / "meta.json").read_text())
    except (OSError, ValueError):
        return {}


def default_run_name(problems: list) -> str:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    names = "+".join(Path(p).stem for p in problems)[:60]
    return f"{stamp}-{names}"


def new_run_dir(results_dir: Path, problems: list) -> Path:
    """A run folder of its own, made here: two runs started in the same second get two folders (-2, -3, ...)."""
    results_dir.mkdir(parents=True, exist_ok=True)
    name = default_run_name(problems)
    for attempt in range(1, 1000):
        folder = results_dir / (name if attempt == 1 else f"{name}-{attempt}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
    raise UserError(f"no free run folder named {name}-N under {results_dir}")


def check_out(out: Path, resume: bool) -> None:
    """--out must be a folder, and one that holds results only when --resume says to go on with them."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file, not a folder: give a run folder")
    results = out / "results.jsonl"
    if results.exists() and not resume:
        count = sum(1 for line in results.read_text().splitlines() if line.strip())
        raise UserError(f"--out {out} already holds a run ({count} result(s)): add --resume to go on "
                                      f"with it, or give another --out")


def list_command(argv: list) -> int:
    """Print problems with their constants, input shapes and bytes, FLOPs and candidates."""
    parser = argparse.ArgumentParser(prog="run.py list", description=list_command.__doc__)
    parser.add_argument("--problem", action="append", default=[], metavar="NAME_OR_PATH",
                        help="problems to list (default: every file in problems/)")
    parser.add_argument("--problems-root", metavar="DIR", help="a problem tree such as KernelBench's")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a module constant")
    args = parser.parse_args(argv)
    overrides = discover.parse_set(args.set)
    names = args.problem or ([args.problems_root] if args.problems_root else [str(discover.PROBLEMS_DIR)])
    roots = (Path(args.problems_root),) if args.problems_root else ()
    paths = [p for name in names for p in discover.resolve_problem(name, roots)]
    from harness.common import problem_info

    console = report.wide_console()
    for path in paths:
        constants = discover.module_constants(path.read_text())
        constants.update({k: v for k, v in overrides.items() if k in constants})
        info = problem_info.describe(path, overrides)
        folder = discover.SOLUTIONS_DIR / path.stem
        candidates = [p.name for p in discover.candidate_files(folder)] if folder.is_dir() else []
        shown = ", ".join(f"{k}={v}" for k, v in constants.items())
        sizes = (f"inputs {', '.join(info['inputs'])} ({info['input_bytes'] / 1e6:,.1f} MB), "
                 f"{info['flops'] / 1e9:,.3g} GFLOP" if "error" not in info else f"[yellow]{info['error']}[/]")
        console.print(f"[bold]{path.stem}[/]  {shown}\n    {sizes}\n    candidates: "
                      f"{', '.join(candidates) or '(none)'}",
                      highlight=False)
    return 0


def lint_command(argv: list) -> int:
    """Check problems for references that ignore their inputs or that zeros or a constant would pass."""
    parser = argparse.ArgumentParser(prog="run.py lint", description=lint_command.__doc__,
                                     epilog="exit status: 0 no findings, 1 findings, 2 usage error, 3 a problem could "
                                            "not be checked here (too large for this machine: the message says which "
                                            "--set shrinks it).")
    parser.add_argument("--problem", action="append", required=True, metavar="NAME_OR_PATH")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args(argv)
    discover.parse_set(args.set)
    paths = [p for name in args.problem for p in discover.resolve_problem(name)]
    device = environment.resolve_device(args.device, environment.probe_environment(args.device))
    console, found, unchecked = report.wide_console(), 0, 0
    for path in paths:  # in a subprocess: this process never imports torch
        proc = subprocess.run([sys.executable, "-m", "harness.judge.lint", str(path), device, *args.set],
                              cwd=environment.ROOT, capture_output=True, text=True)
        outcome = lint_outcome(proc)
        if "not_checked" in outcome:
            unchecked += 1
            console.print(f"{path.stem}: [yellow]not checked: {outcome['not_checked']}[/]", highlight=False)
            continue
        findings = outcome.get("findings", [])
        found += len(findings)
        verdict = "[green]ok[/]" if not findings else "[red]" + "; ".join(findings) + "[/]"
        console.print(f"{path.stem}: {verdict}", highlight=False)
    return 1 if found else 3 if unchecked else 0


def lint_outcome(proc: subprocess.CompletedProcess) -> dict:
    """The lint process's JSON, or why it gave none, never empty (docs/decisions/judge-death.md)."""
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        pass
    said = proc.stderr.strip()[-300:]
    if proc.returncode < 0:
        killed = f"killed by signal {-proc.returncode}" + (" (most likely the out-of-memory killer)"
                                                           if proc.returncode == -9 else "")
        said = f"{said} ({killed})" if said else killed
    return {"not_checked": f"the lint failed: {said or f'exit code {proc.returncode} and no output'}"}


def report_command(argv: list) -> int:
    """Rebuild a run's tables and plots from its results.jsonl alone (and gate them, for CI)."""
    parser = argparse.ArgumentParser(prog="run.py report", description=report_command.__doc__)
    parser.add_argument("dir", help="a run directory (holding results.jsonl)")
    parser.add_argument("--gate", action="store_true", help="exit 1 when any candidate is not correct or too slow")
    add_gate_arguments(parser)
    args = parser.parse_args(argv)
    path = Path(args.dir) / "results.jsonl"
    if not path.is_file():
        return fail(f"no results.jsonl in '{args.dir}'")
    check_gate_arguments(args)
    recorded, torn = records.read_results(path)
    results = latest_results(recorded)
    report.write_tables(Path(args.dir), results)
    console = report.wide_console()
    if torn:
        console.print(f"[yellow]ignored {torn} torn or unreadable line(s) in {path}[/]")
    report.print_summary(results, Path(args.dir), console)
    return publish(Path(args.dir), results, results, args)


def compare_command(argv: list) -> int:
    """Per-pair changes between two runs; a speedup change is only called real when the CIs do not overlap. Exit 1
    when any pair got worse (the gate's rule against a baseline: no longer correct, newly flagged so that every gate
    fails it, or slower beyond both CIs), 0 otherwise; pairs measured on another GPU model, precision, mode or sizes
    are not comparable, never faster or slower."""
    parser = argparse.ArgumentParser(prog="run.py compare", description=compare_command.__doc__)
    parser.add_argument("old", help="a run directory or its results.jsonl")
    parser.add_argument("new", help="a run directory or its results.jsonl")
    args = parser.parse_args(argv)
    runs = []
    for given in (args.old, args.new):
        folder = Path(given).parent if Path(given).is_file() else Path(given)
        if not (folder / "results.jsonl").is_file():
            return fail(f"no results.jsonl in '{given}'")
        runs.append(load_results(folder))
    console, changes = report.wide_console(), gate.compare_runs(*runs)
    console.print(report.compare_table(changes))
    worse = [c for c in changes if c.worse]
    for c in worse:
        console.print(f"worse: {c.problem}/{c.candidate}: {c.worse}", highlight=False, soft_wrap=True)
    console.print(f"{len(worse)} of {len(changes)} pair(s) got worse" if worse else "no pair got worse",
                  highlight=False)
    return 1 if worse else 0
