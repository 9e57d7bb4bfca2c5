"""A/A runs of KernelBench problems: each problem judged against itself (its own source plus
`class ModelNew(Model): pass`), through the harness's own --manifest path, with --resume so that a sweep can
span several calls. An honest harness finds every such pair correct, unflagged (but for no_custom_kernel), a tie.

    python bench/kernelbench_aa.py KERNELBENCH_DIR --out DIR [--levels 1,2,3] [--small] [--every N]
                                   [--problems level1/51_ ...] [-- RUN_PY_ARGS ...]

KERNELBENCH_DIR is the folder holding level1/, level2/, ... (ScalingIntelligence/KernelBench's KernelBench/).
`--small` shrinks each problem's size constants (a manifest entry's `set`, the harness's per-pair --set) until
its reference is estimated at SMALL_TARGET_US on an H100, and further while it measures over SMALL_MAX_US on this
machine's GPU, for the microsecond regime; the sizes (kept in DIR/sizes.json for --resume) are in the table.
Writes DIR/candidates/ and DIR/pairs.csv (never commit KernelBench's files), DIR/run/ (the harness's run folder),
and DIR/kernelbench-aa.jsonl and .md: per problem the status, flags, speedup and CI, tie, ref ms, wall s
(and sizes); totals: correct, ties, false flags, pairs per hour, the GPU's busy share, where the time went.
"""
from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
from aa_coverage import aa_source  # noqa: E402  (one A/A candidate for both benches)
EXPECTED_FLAGS = {"no_custom_kernel"}  # an A/A candidate launches exactly the reference's kernels
STAGES = ("judge_start", "reference", "build", "workers", "correctness", "timing_setup", "timing", "finish", "judge_exit")

# --small: a reference call estimated from its bytes and FLOPs (shapes on the meta device) at an H100's
# sustained float32 rates, plus a launch, shrunk by halving its largest size constant until under the target.
SMALL_TARGET_US, BYTES_PER_US, FLOPS_PER_US, LAUNCH_US = 30.0, 2.5e6, 2.5e7, 3.0
SMALL_MAX_US = 100.0  # the microsecond regime's upper end: a reference measured above it (on a GPU) is shrunk further
MEASURE_WARMUP, MEASURE_CALLS = 3, 10
SIZE_FLOOR = 16  # constants below this are axes, kernel sizes, strides...: never shrunk
MEASURED_FLOOR = 4  # shrinking by measurement halves sizes of 8-31 too (a transposed 3D convolution's 16 channels)
NOT_SIZES = ("kernel", "stride", "pad", "dilation", "group", "axis", "dim_")


def select_problems(root: Path, levels: list, prefixes: list, every: int) -> list[Path]:
    """Problem files of the levels (every Nth of each, by number), or those whose level/name starts with a prefix."""
    if prefixes:
        found = [p for prefix in prefixes for p in sorted(root.glob(prefix + "*.py"))]
        missing = [prefix for prefix in prefixes if not list(root.glob(prefix + "*.py"))]
        if missing:
            raise SystemExit(f"no KernelBench problem matches {', '.join(missing)} under {root}")
        return found
    chosen = []
    for level in levels:
        files = sorted((root / f"level{level}").glob("*.py"), key=lambda p: int(p.name.split("_")[0]))
        chosen += files[::every]
    return chosen


def estimate_us(problem: Path, overrides: dict):
    """A reference call's estimated microseconds on an H100 at these sizes (None: it does not run on meta)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from harness.common.load import load_module

    try:
        module = load_module(problem.read_text(), problem, "small_sizes_probe", overrides)
        with torch.device("meta"), torch.no_grad():
            model = module.Model(*module.get_init_inputs())
            inputs = module.get_inputs()
            with FlopCounterMode(display=False) as counter:
                out = model(*inputs)
    except Exception:
        return None
    tensors = [t for t in [*inputs, *(out if isinstance(out, (tuple, list)) else [out])] if isinstance(t, torch.Tensor)]
    if isinstance(model, torch.nn.Module):
        tensors += list(model.parameters()) + list(model.buffers())
    moved = sum(t.numel() * t.element_size() for t in tensors)
    return max(moved / BYTES_PER_US, counter.get_total_flops() / FLOPS_PER_US) + LAUNCH_US


def size_constants(problem: Path) -> dict:
    """The module's top-level size constants, as its code computes them (`N = 2048 * 2` too): ints and
    tuples of ints, but for names and values that are axes, kernel sizes, strides..."""
    import ast
    from harness.common.load import load_module

    module = load_module(problem.read_text(), problem, "small_sizes_probe")
    names = [node.targets[0].id for node in ast.parse(problem.read_text()).body
             if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)]
    sizes = {}
    for name in names:
        value = getattr(module, name, None)
        if any(word in name.lower() for word in NOT_SIZES):
            continue
        if (type(value) is int and value >= SIZE_FLOOR) or (
                type(value) is tuple and value and all(type(v) is int for v in value) and max(value) >= SIZE_FLOOR):
            sizes[name] = value
    return sizes


def halved(value):
    """An int halved, or a tuple with its largest element halved."""
    if type(value) is int:
        return value // 2
    i = value.index(max(value))
    return value[:i] + (value[i] // 2,) + value[i + 1:]


def measured_us(problem: Path, overrides: dict):
    """A reference call's median microseconds on this machine's GPU at these sizes (None: no GPU, or it fails here)."""
    import torch

    if not torch.cuda.is_available():
        return None
    try:
        return statistics.median(reference_call_times_us(problem, overrides))
    except Exception:
        return None
    finally:
        torch.cuda.empty_cache()  # the model and inputs are gone by now: the next probe and the sweep get the memory


def reference_call_times_us(problem: Path, overrides: dict) -> list:
    """MEASURE_CALLS calls of the problem's reference on the GPU after MEASURE_WARMUP, each by CUDA events (us)."""
    import torch
    from harness.common.load import load_module

    module = load_module(problem.read_text(), problem, "small_sizes_probe", overrides)
    torch.manual_seed(0)
    with torch.no_grad():
        model = module.Model(*module.get_init_inputs())
        model = model.cuda() if isinstance(model, torch.nn.Module) else model
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
        times = []
        for call in range(MEASURE_WARMUP + MEASURE_CALLS):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*inputs)
            end.record()
            end.synchronize()
            if call >= MEASURE_WARMUP:
                times.append(start.elapsed_time(end) * 1e3)
    return times


def shrunk(problem: Path, sizes: dict, overrides: dict, cost, target: float,
           floor: int = SIZE_FLOOR) -> tuple[dict, float]:
    """Overrides that bring cost(problem, overrides) to at most `target`, halving the largest size constant of at
    least 2 x floor one at a time (all of them together when one alone does not run), and that cost; as they came
    if cost is None."""
    frozen, current = set(), cost(problem, overrides)
    largest = lambda value: value if type(value) is int else max(value)  # noqa: E731
    while current is not None and current > target:
        free = {name: overrides.get(name, value) for name, value in sizes.items()
                if name not in frozen and largest(overrides.get(name, value)) >= 2 * floor}
        if not free:
            break
        name = max(free, key=lambda n: largest(free[n]))
        trial = {**overrides, name: halved(free[name])}
        after = cost(problem, trial)
        if after is None:  # sizes that go together (a shape and its batch, say): all of them halved at once
            trial = {**overrides, **{n: halved(v) for n, v in free.items()}}
            after = cost(problem, trial)
        if after is None:  # the model does not take that size (a divisibility, say): keep it
            frozen.add(name)
            continue
        overrides, current = trial, after
    return overrides, current


def small_sizes(problem: Path) -> tuple[dict, float, float]:
    """Size constants for a reference estimated at about SMALL_TARGET_US, shrunk further while one measured on this
    machine's GPU takes over SMALL_MAX_US (the estimate misses some kernels: transposed 3D convolutions estimated at
    30-140 us, their sizes at the floor already, took 0.2-1.3 ms on the H100); with the estimate and the measurement
    (None without a GPU) at those sizes. ({}, ...) for a problem that is already that small."""
    sizes = size_constants(problem)
    overrides, estimate = shrunk(problem, sizes, {}, estimate_us, SMALL_TARGET_US)
    smaller, measured = shrunk(problem, sizes, overrides, measured_us, SMALL_MAX_US, floor=MEASURED_FLOOR)
    if smaller != overrides:  # the estimate at the sizes the measurement chose
        overrides, estimate = smaller, estimate_us(problem, smaller)
    return overrides, estimate, measured


def write_pairs(problems: list[Path], out: Path, small: bool) -> tuple[Path, dict]:
    """One A/A candidate per problem, and the manifest that pairs them (with each entry's sizes if `small`: chosen
    once, kept in DIR/sizes.json, so that a resumed sweep, on another machine too, judges the pairs it began with)."""
    folder = out / "candidates"
    folder.mkdir(parents=True, exist_ok=True)
    chosen_file = out / "sizes.json"
    chosen = json.loads(chosen_file.read_text()) if small and chosen_file.exists() else {}
    rows, estimates = [], {}
    for problem in problems:
        candidate = folder / f"{problem.parent.name}_{problem.name}"
        candidate.write_text(aa_source(problem))
        overrides = {}
        if small:
            key = f"{problem.parent.name}/{problem.stem}"
            if key not in chosen:
                overrides, estimate, measured = small_sizes(problem)
                chosen[key] = {"set": overrides, "estimate_us": estimate, "measured_us": measured}
                chosen_file.write_text(json.dumps(chosen, indent=1) + "\n")
            entry = chosen[key]
            overrides = {name: tuple(v) if isinstance(v, list) else v  # JSON gives a tuple back as a list
                         for name, v in entry["set"].items()}
            estimates[problem.stem] = entry
            measured = "" if entry["measured_us"] is None else f", {entry['measured_us']:.0f} us measured"
            print(f"{key}: {overrides or 'as is'} (~{entry['estimate_us'] or 0:.0f} us estimated{measured})", flush=True)
        sizes = " ".join(f"{name}={value!r}".replace(", ", ",") for name, value in overrides.items())
        rows.append([str(problem.resolve()), str(candidate.resolve()), sizes])
    manifest = out / "pairs.csv"
    with open(manifest, "w", newline="") as f:  # a tuple's commas are quoted
        csv.writer(f).writerows([["problem", "candidate", "set"], *rows])
    return manifest, estimates


def summarize(run_dir: Path, estimates: dict) -> list[dict]:
    """The bench's row per pair, from the run's results.jsonl."""
    rows = []
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        busy_ms = (sum(r["ref_samples_ms"]) * (r["ref_batch"] or 1) + sum(r["new_samples_ms"]) * (r["new_batch"] or 1))
        rows.append({"problem": r["problem"], "status": r["status"], "flags": r["flags"],
                     "false_flags": sorted(set(r["flags"]) - EXPECTED_FLAGS), "speedup": r["speedup"],
                     "speedup_ci": [r["speedup_ci_low"], r["speedup_ci_high"]], "tie": r["tie"], "ref_ms": r["ref_ms"],
                     "wall_s": r["wall_s"], "timed_s": round(busy_ms / 1e3, 3), "rounds": r["timing_rounds"],
                     "sizes": r.get("overrides"), "estimate_us": estimates.get(r["problem"], {}).get("estimate_us"),
                     "measured_us": estimates.get(r["problem"], {}).get("measured_us"),
                     "phases_s": {k: v for k, v in (r.get("phases_s") or {}).items() if k in STAGES},
                     "error": r["error"], "gpu": r["gpu"], "harness": r["harness"]})
    return rows


def markdown(rows: list[dict]) -> str:
    """The totals, where a pair's time went, and the table."""
    if not rows:
        return "no pairs judged\n"
    correct = sum(r["status"] == "correct" for r in rows)
    ties = sum(bool(r["tie"]) for r in rows)
    flagged = [r for r in rows if r["false_flags"]]
    walls = [r["wall_s"] or 0.0 for r in rows]
    speedups = [r["speedup"] for r in rows if r["speedup"] is not None]
    lines = [f"{len(rows)} pairs: {correct} correct, {ties} ties ({100 * ties / len(rows):.0f}%), "
             f"{len(flagged)} with a false flag"
             + (f" ({', '.join(sorted({f for r in flagged for f in r['false_flags']}))})" if flagged else "") + ".",
             f"Speedups {min(speedups):.3f}-{max(speedups):.3f}." if speedups else "No speedups.",
             f"Pair wall: median {statistics.median(walls):.1f} s, total {sum(walls):.0f} s "
             f"({3600 * len(rows) / max(sum(walls), 1e-9):.0f} pairs per hour); the GPU ran timed calls "
             f"{100 * sum(r['timed_s'] for r in rows) / max(sum(walls), 1e-9):.0f}% of it.", ""]
    phases = [r["phases_s"] for r in rows if r["phases_s"]]
    if phases:
        lines += ["Where a pair's time went (seconds; judge_start is the wait for a judge started ahead):", "",
                  "| stage | " + " | ".join(STAGES) + " |", "|---|" + "---:|" * len(STAGES),
                  "| median | " + " | ".join(f"{statistics.median(p.get(s, 0.0) for p in phases):.2f}" for s in STAGES) + " |",
                  "| total | " + " | ".join(f"{sum(p.get(s, 0.0) for p in phases):.0f}" for s in STAGES) + " |", ""]
    small = any(r["sizes"] or r["estimate_us"] for r in rows)
    lines += ["| problem | status | flags | speedup [95% CI] | tie | ref ms | rounds | wall s |"
              + (" sizes (us: estimated, measured) |" if small else ""),
              "|---|---|---|---|---|---:|---:|---:|" + ("---|" if small else "")]
    for r in rows:
        speed = "-" if r["speedup"] is None else f"{r['speedup']:.3f} [{r['speedup_ci'][0]:.3f}, {r['speedup_ci'][1]:.3f}]"
        notes = "; ".join(filter(None, [", ".join(r["flags"]), (r["error"] or "")[:120]]))
        ref = "-" if r["ref_ms"] is None else f"{r['ref_ms']:.4g}"
        sizes = ""
        if small:
            named = " ".join(f"{k}={v}" for k, v in (r["sizes"] or {}).items()) or "as is"
            us = ", ".join(f"{r[k]:.0f}" if r.get(k) is not None else "-" for k in ("estimate_us", "measured_us"))
            sizes = f" {named} ({us}) |" if r["estimate_us"] or r.get("measured_us") else f" {named} |"
        lines.append(f"| {r['problem']} | {r['status']} | {notes.replace('|', '/')} | {speed} | {r['tie']} | {ref} | "
                     f"{r['rounds'] or '-'} | {r['wall_s']:.1f} |{sizes}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernelbench_dir", type=Path, help="the folder holding level1/, level2/, ...")
    parser.add_argument("--out", type=Path, required=True, help="bench folder (candidates, manifest, run, tables)")
    parser.add_argument("--levels", default="1,2,3", help="levels to take problems from (default 1,2,3)")
    parser.add_argument("--every", type=int, default=1, help="take every Nth problem of each level (default all)")
    parser.add_argument("--problems", nargs="*", default=[], help="level/name prefixes, e.g. level1/51_ (instead of levels)")
    parser.add_argument("--small", action="store_true",
                        help=f"shrink each problem to a reference of about {SMALL_TARGET_US:.0f} us (estimated; "
                             f"at most {SMALL_MAX_US:.0f} us measured, on a GPU)")
    args, run_args = parser.parse_known_args(argv)  # the rest (after --) goes to run.py
    problems = select_problems(args.kernelbench_dir, [int(x) for x in args.levels.split(",")], args.problems, args.every)
    manifest, estimates = write_pairs(problems, args.out, args.small)
    run_dir = args.out / "run"
    extra = [a for a in run_args if a != "--"]
    command = [sys.executable, "run.py", "--manifest", str(manifest.resolve()), "--out", str(run_dir.resolve()),
               "--resume", *extra]
    print(" ".join(command[1:]), flush=True)
    code = subprocess.run(command, cwd=ROOT).returncode
    rows = summarize(run_dir, estimates) if (run_dir / "results.jsonl").exists() else []
    (args.out / "kernelbench-aa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (args.out / "kernelbench-aa.md").write_text(markdown(rows))
    print(markdown(rows))
    return code


if __name__ == "__main__":
    sys.exit(main())
