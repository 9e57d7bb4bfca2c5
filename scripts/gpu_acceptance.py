"""The GPU acceptance check, in parts that each fit one call of a lent GPU machine, and their summary.

    python scripts/gpu_acceptance.py readme --out DIR       # the README's commands, exactly as typed (no --device),
                                                             # then the last with --device cuda:0 to compare
    python scripts/gpu_acceptance.py kernelbench KB --out DIR  # KernelBench problems against themselves (KB: the
                                                             # folder holding level1/, level2/)
    python scripts/gpu_acceptance.py tests --out DIR [PYTEST ARGS]  # pytest -m gpu (all GPU tests, or those named)
    python scripts/gpu_acceptance.py isolation --out DIR [--before OLD]  # issue 15's attacks on the GPU, and the cost
                                                             # of isolation: the warm full-size sigmoid A/A pair here
                                                             # and in OLD (a checkout of an earlier harness), alternately
    python scripts/gpu_acceptance.py summary DIR... > results/gpu-acceptance-h100.md

Each part writes DIR/acceptance-<part>.json (what ran, its exit status, its verdicts) and logs beside it; `summary`
reads any number of them (from several calls) and writes the Markdown summary that is committed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

README_COMMANDS = [
    ["python", "run.py", "--problem", "sigmoid"],
    ["python", "run.py", "--problem", "sigmoid", "--problem", "hardsigmoid", "--problem",
     "gemm_sigmoid_scaling_residualadd", "--problem", "matmul_sigmoid_sum"],
]
# The last README command again with --device cuda:0, in the same call: the no-flag run must give its verdicts.
EXPLICIT_DEVICE = [*README_COMMANDS[-1], "--device", "cuda:0"]
BOARD = ROOT / "results" / "leaderboards" / "h100"  # made with --device cuda:0: the same verdicts are expected
KERNELBENCH_PROBLEMS = ["level1/51_", "level1/61_", "level2/61_", "level2/91_"]
WORK = Path(os.environ.get("ACCEPTANCE_WORK", Path(tempfile.gettempdir()) / "gpu-acceptance"))  # run folders: too many files to bring back


def provenance() -> dict:
    """Which harness, device and torch ran the part."""
    from harness.runner import environment

    env = environment.probe_environment()
    return {"commit": os.environ.get("HARNESS_COMMIT") or environment.harness_version(), "gpus": env["gpus"],
            "torch": env["torch"], "cuda": env["cuda_version"], "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


DEADLINE = [float("inf")]  # monotonic time by which the part's commands must end (--budget)


def run_logged(command: list, log: Path, timeout: float, env: dict | None = None, cwd: Path = ROOT) -> tuple[int, float]:
    """Run a command (from the repository root, or `cwd`), its output to `log`; (exit status, wall seconds)."""
    started = time.monotonic()
    timeout = max(1.0, min(timeout, DEADLINE[0] - started))
    with open(log, "w") as out:
        try:
            code = subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                                  env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}).returncode
        except subprocess.TimeoutExpired:
            code = 124
    return code, round(time.monotonic() - started, 1)


def pair_rows(run_dir: Path) -> list[dict]:
    """The verdicts of a run folder, one row per pair."""
    rows = []
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        rows.append({k: r.get(k) for k in ("problem", "solution", "status", "flags", "speedup", "speedup_ci_low",
                                            "speedup_ci_high", "tie", "error", "device", "wall_s", "timing_rounds",
                                            "rounds_discarded", "gpu_wait_ms", "peak_mem_mb")})
    return rows


def part_readme(out: Path) -> dict:
    """The README's commands, typed exactly, then the last one with --device cuda:0: which run folder each made and
    its verdicts; the no-flag four-problem run compared with the explicit-device run and the committed H100 board."""
    from harness.runner import cli, gate

    python = shutil.which("python") or sys.executable
    commands, folders = [], []
    for i, command in enumerate([*README_COMMANDS, EXPLICIT_DEVICE]):
        before = set((ROOT / "results").iterdir())
        code, wall = run_logged([python, *command[1:]], out / f"readme-{i}.log", timeout=1200)
        made = sorted(set((ROOT / "results").iterdir()) - before)
        entry = {"command": " ".join(command), "exit": code, "wall_s": wall, "run_dir": [str(m.name) for m in made]}
        folders.append(made[-1] if made and (made[-1] / "results.jsonl").exists() else None)
        if folders[-1]:
            entry["pairs"] = pair_rows(folders[-1])
            shutil.copy(folders[-1] / "results.jsonl", out / f"readme-{i}-results.jsonl")
        commands.append(entry)
    no_flag, explicit = folders[len(README_COMMANDS) - 1], folders[-1]
    if no_flag:
        now = cli.load_results(no_flag)
        commands[len(README_COMMANDS) - 1]["against_board"] = [vars(c) for c in gate.compare_runs(cli.load_results(BOARD), now)]
        if explicit:
            commands[len(README_COMMANDS) - 1]["against_explicit"] = [
                vars(c) for c in gate.compare_runs(cli.load_results(explicit), now)]
    return {"commands": commands}


def part_kernelbench(out: Path, kernelbench: Path) -> dict:
    """KernelBench's problems of the issue against themselves, at the files' own sizes, with no --device."""
    bench = WORK / "kernelbench"
    command = [sys.executable, "bench/kernelbench_aa.py", str(kernelbench), "--out", str(bench), "--problems",
               *KERNELBENCH_PROBLEMS]
    code, wall = run_logged(command, out / "kernelbench.log", timeout=1500)
    rows = [json.loads(line) for line in (bench / "kernelbench-aa.jsonl").read_text().splitlines()] \
        if (bench / "kernelbench-aa.jsonl").exists() else []
    if (bench / "kernelbench-aa.md").exists():
        shutil.copy(bench / "kernelbench-aa.md", out / "kernelbench-aa.md")
    return {"command": "python bench/kernelbench_aa.py KB --problems " + " ".join(KERNELBENCH_PROBLEMS), "exit": code,
            "wall_s": wall, "pairs": rows}


def part_tests(out: Path, pytest_args: list, keep: str = "HARNESS_GPU_ADVERSARIAL_OUT") -> dict:
    """pytest -m gpu; the run folder a GPU test keeps (the adversarial set's, or the isolation set's: `keep` names
    the variable that tells the test where) is summarized."""
    from xml.etree import ElementTree

    adversarial = WORK / keep.lower()
    shutil.rmtree(adversarial, ignore_errors=True)  # an earlier part's run on a warm machine is not this one's
    junit = out / "pytest-gpu.xml"
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-p", "no:cacheprovider", f"--junitxml={junit}", *pytest_args]
    code, wall = run_logged(command, out / "pytest-gpu.log", timeout=3000,
                            env={keep: str(adversarial)})
    counts, failed = {}, []
    if junit.exists():
        suite = ElementTree.parse(junit).getroot()
        suite = suite.find("testsuite") if suite.tag == "testsuites" else suite
        counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
        failed = [f"{c.get('classname')}::{c.get('name')}" for c in suite.iter("testcase")
                  if c.find("failure") is not None or c.find("error") is not None]
    entry = {"command": "pytest -m gpu " + " ".join(pytest_args), "exit": code, "wall_s": wall, "counts": counts,
             "failed": failed}
    if (adversarial / "results.jsonl").exists():
        entry["adversarial"] = pair_rows(adversarial)
    return entry


AA_SIGMOID = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.sigmoid(x)\n"
COST_RUNS = 2  # A/A runs of the full-size sigmoid per harness variant, alternating


def part_isolation(out: Path, before, skip_tests: bool = False, cost_runs: int = COST_RUNS) -> dict:
    """The isolation GPU tests (their attack run kept and summarized), then the cost: the full-size sigmoid against
    itself, as `python run.py --problem sigmoid --solution AA` is typed, COST_RUNS times in this checkout, in it
    with the GPU probe off, and in `before`, alternately (same machine, same call): each pair's wall seconds,
    speedup and CI, and its results (raw samples) beside the logs."""
    entry = {"command": "isolation (tests skipped)", "exit": 0, "wall_s": 0.0} if skip_tests else \
        part_tests(out, ["tests/adversarial/test_isolation_gpu.py"], keep="HARNESS_GPU_ISOLATION_OUT")
    WORK.mkdir(parents=True, exist_ok=True)
    aa, no_probe = WORK / "aa_sigmoid.py", WORK / "no-probe.yaml"
    aa.write_text(AA_SIGMOID)
    no_probe.write_text("gpu_probe_ms: 0.0\n")
    variants = [("before", before, []), ("after", ROOT, []), ("after, probe off", ROOT, ["--config", str(no_probe)])]
    cost = []
    for i in range(cost_runs):
        for name, tree, extra in variants:
            if tree is None:
                continue
            label = f"cost-{name.replace(', ', '-').replace(' ', '-')}-{i}"
            run_dir = WORK / label
            shutil.rmtree(run_dir, ignore_errors=True)
            code, wall = run_logged([sys.executable, "run.py", "--problem", "sigmoid", "--solution", str(aa), "--out",
                                     str(run_dir), *extra], out / f"{label}.log", timeout=600, cwd=tree)
            rows = pair_rows(run_dir) if (run_dir / "results.jsonl").exists() else []
            if rows:
                shutil.copy(run_dir / "results.jsonl", out / f"{label}-results.jsonl")
            cost.append({"harness": name, "run": i, "exit": code, "run_wall_s": wall, **(rows[0] if rows else {})})
    entry["cost"] = cost
    return entry


def speed(row: dict) -> str:
    if row.get("speedup") is None:
        return "-"
    low, high = row["speedup_ci"] if "speedup_ci" in row else (row["speedup_ci_low"], row["speedup_ci_high"])
    return f"{row['speedup']:.3f} [{low:.3f}, {high:.3f}]"


def pairs_table(rows: list, name_key: str = "solution") -> list[str]:
    lines = ["| problem | candidate | status | speedup [95% CI] | flags / reason |", "|---|---|---|---|---|"]
    for r in rows:
        notes = "; ".join(x for x in (", ".join(r.get("flags") or []), (r.get("error") or "")[:140]) if x)
        lines.append(f"| {r['problem']} | {r.get(name_key, '')} | {r['status']} | {speed(r)} | {notes.replace('|', '/')} |")
    return lines


def change_row(c: dict) -> str:
    """One pair of a run-to-run comparison as a table row."""
    status = c["new_status"] if c["old_status"] == c["new_status"] else f"{c['old_status']} -> {c['new_status']}"
    old = "-" if c["old_speedup"] is None else f"{c['old_speedup']:.3f}"
    new = "-" if c["new_speedup"] is None else f"{c['new_speedup']:.3f}"
    return f"| {c['problem']} | {c['candidate']} | {status} | {old} -> {new} | {c['verdict']} |"


def summary(records: list[dict]) -> str:
    """The Markdown summary of every part record given."""
    lines = ["# GPU acceptance", "", "Made by `scripts/gpu_acceptance.py` (its parts ran in separate calls of a lent GPU "
             "machine; `summary` wrote this file from their records, which sit beside it in `results/gpu-acceptance/`).", ""]
    for record in records:
        p = record["provenance"]
        lines += [f"## {record['part']}", "", f"Harness {p['commit']}; {', '.join(p['gpus'])}; torch {p['torch']}, "
                  f"CUDA {p['cuda']}; {p['date']}.", ""]
        data = record["data"]
        for entry in data.get("commands", [data]):
            lines += [f"`{entry['command']}`: exit {entry['exit']}, {entry['wall_s']:.0f} s.", ""]
            if "counts" in entry:
                c = entry["counts"]
                lines += [f"{c.get('tests', 0)} tests: {c.get('tests', 0) - c.get('failures', 0) - c.get('errors', 0) - c.get('skipped', 0)} "
                          f"passed, {c.get('failures', 0)} failed, {c.get('errors', 0)} errors, {c.get('skipped', 0)} skipped."
                          + (f" Failed: {', '.join(entry['failed'])}." if entry["failed"] else ""), ""]
            if entry.get("adversarial"):
                lines += ["The GPU run kept by the tests (no --device; judges ahead; build stage):", ""]
                lines += pairs_table(entry["adversarial"]) + [""]
            if entry.get("pairs"):
                lines += pairs_table(entry["pairs"]) + [""]
            if entry.get("cost"):
                lines += ["Cost of isolation: the full-size sigmoid against itself (`python run.py --problem sigmoid "
                          "--solution AA`, torch.sigmoid), before (the earlier harness) and after, alternately:", "",
                          "| harness | run | status | speedup [95% CI] | tie | rounds (dropped) | GPU wait ms | pair wall s "
                          "| run.py wall s | flags |", "|---|---:|---|---|---|---|---:|---:|---:|---|"]
                lines += [f"| {c['harness']} | {c['run']} | {c.get('status', 'exit ' + str(c['exit']))} | {speed(c)} | "
                          f"{c.get('tie')} | {c.get('timing_rounds')} ({c.get('rounds_discarded') or 0}) | {c.get('gpu_wait_ms')} | "
                          f"{c.get('wall_s') or 0:.1f} | {c['run_wall_s']:.0f} | {', '.join(c.get('flags') or [])} |"
                          for c in entry["cost"]] + [""]
            for key, title, name in (
                    ("against_explicit", "Against the same command with `--device cuda:0`, run just after it in the same "
                     "call:", "cuda:0"),
                    ("against_board", "Against the committed H100 board (`results/leaderboards/h100`, made with "
                     "`--device cuda:0`):", "board")):
                if entry.get(key):
                    lines += [title, "", f"| problem | candidate | status ({name} -> no flag) | speedup ({name} -> no flag) "
                              "| change |", "|---|---|---|---|---|"]
                    lines += [change_row(c) for c in entry[key]] + [""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=["readme", "kernelbench", "tests", "isolation", "summary"])
    parser.add_argument("--before", type=Path, help="isolation: a checkout of the harness to compare costs with")
    parser.add_argument("--skip-tests", action="store_true", help="isolation: the cost runs only")
    parser.add_argument("--cost-runs", type=int, default=COST_RUNS, help="isolation: A/A runs per harness variant")
    parser.add_argument("args", nargs="*", help="kernelbench: the KernelBench folder; tests: pytest arguments; "
                                                "summary: folders holding acceptance-*.json")
    parser.add_argument("--out", type=Path, help="where the part writes its record and logs")
    parser.add_argument("--budget", type=float, default=3000, help="seconds for the part's commands in all (a command "
                                                                   "cut off records exit 124 and what it finished)")
    args, unknown = parser.parse_known_args()
    if args.part == "summary":
        records = [json.loads(p.read_text()) for folder in args.args for p in sorted(Path(folder).glob("acceptance-*.json"))]
        order = {"readme": 0, "kernelbench": 1, "tests": 2, "isolation": 3}
        print(summary(sorted(records, key=lambda r: (order[r["part"]], r["provenance"]["date"]))))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    DEADLINE[0] = time.monotonic() + args.budget
    started = provenance()
    if args.part == "readme":
        data = part_readme(args.out)
    elif args.part == "kernelbench":
        data = part_kernelbench(args.out, Path(args.args[0]))
    elif args.part == "isolation":
        data = part_isolation(args.out, args.before, args.skip_tests, args.cost_runs)
    else:
        data = part_tests(args.out, args.args + unknown)
    name = f"acceptance-{args.part}" + (f"-{time.strftime('%H%M%S')}" if args.part == "tests" else "") + ".json"
    (args.out / name).write_text(json.dumps({"part": args.part, "provenance": started, "data": data}, indent=1) + "\n")
    print((args.out / name).read_text()[-3000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
