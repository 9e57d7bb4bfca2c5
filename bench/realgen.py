#!/usr/bin/env python3
"""Real LLM-written KernelBench candidates, judged by this harness and by KernelBench's own `eval_kernel_against_ref`
on the same GPU, and a table of both verdicts with an explanation for every disagreement.

The corpus is rebuilt from bench/realgen/manifest.csv by bench/realgen_corpus.py (public repositories, fetched first);
KernelBench's evaluator is its own src/kernelbench/{eval,timing}.py, copied from its repository by `prepare`. Neither
is committed. On a GPU machine, in this order (each step resumes where it stopped, so it can span several calls):

  python3 bench/realgen.py prepare --kb-mirror MIRROR/ScalingIntelligence+KernelBench/repo   (here: copies eval.py)
  python3 bench/realgen.py harness --out DIR [--limit N] [--again IDS|all] [--devices LIST]
                                                               run.py --manifest ... --out DIR/harness --resume
  python3 bench/realgen.py kernelbench --out DIR [--limit N]   each pair in a process of its own -> DIR/kernelbench.jsonl
  python3 bench/realgen.py table --out DIR                     DIR/table.md and DIR/table.csv

KernelBench's evaluator runs as its scripts run it (5 correctness trials, 100 timed trials, cuda_event timing, seed
42), against the same problem file, with the harness's build of the candidate where there is one (same sources and
flags: ninja finds nothing to do). Its package __init__ (LLM clients) is not imported: `dataset` and `utils` get
stand-ins, and eval.py needs pydantic (carry it as a wheel on the GPU machine).
"""
from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # harness.common.discover's sha256_text, imported where needed (it brings no torch)
CORPUS = ROOT / ".corpus" / "realgen"
KB_SOURCE = ROOT / ".corpus" / "kernelbench"
EXPLANATIONS = ROOT / "bench" / "realgen" / "explanations.csv"
KB_FILES = ("src/kernelbench/eval.py", "src/kernelbench/timing.py")
KB_TIMEOUT_S = int(os.environ.get("REALGEN_KB_TIMEOUT_S", 600))  # a pair's time, its build included


def corpus_rows(corpus: Path) -> list[dict]:
    """pairs.csv rows (problem, candidate, id, level, problem_id), joined with the manifest's source columns, and the
    candidate's sha256."""
    manifest = {r["id"]: r for r in csv.DictReader((ROOT / "bench" / "realgen" / "manifest.csv").open())}
    rows = list(csv.DictReader((corpus / "pairs.csv").open()))
    return [{**manifest[r["id"]], **r, "candidate_sha": candidate_sha(corpus / r["candidate"])} for r in rows]


def ordered(rows: list[dict], limit: int | None) -> list[dict]:
    """A fixed shuffle, so that a first slice of the corpus is a sample of all its sources and levels."""
    rows = sorted(rows, key=lambda r: r["id"])
    random.Random(36).shuffle(rows)
    return rows[:limit] if limit else rows


def prepare(args) -> None:
    """Copy KernelBench's evaluator (eval.py, timing.py) out of its mirror into .corpus/kernelbench/."""
    KB_SOURCE.mkdir(parents=True, exist_ok=True)
    for path in KB_FILES:
        text = subprocess.run(["git", "--git-dir", args.kb_mirror, "show", f"{args.kb_commit}:{path}"],
                              capture_output=True, text=True, check=True).stdout
        (KB_SOURCE / Path(path).name).write_text(text)
    (KB_SOURCE / "COMMIT").write_text(subprocess.run(["git", "--git-dir", args.kb_mirror, "rev-parse", args.kb_commit],
                                                     capture_output=True, text=True, check=True).stdout)
    print(f"KernelBench's evaluator at {(KB_SOURCE / 'COMMIT').read_text().strip()} -> {KB_SOURCE}")


def run_harness(args) -> int:
    """The harness on the corpus (its first --limit pairs), as a user runs it: run.py --manifest, no --device (with
    --devices, run.py's: several GPUs of one model)."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    manifest = out / "harness_manifest.csv"
    with manifest.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["problem", "candidate"])
        for row in ordered(corpus_rows(args.corpus), args.limit):
            writer.writerow([str(args.corpus / row["problem"]), str(args.corpus / row["candidate"])])
    forget_records(out / "harness" / "results.jsonl", set(args.again.split(",")) if args.again else set())
    command = [sys.executable, "run.py", "--manifest", str(manifest), "--out", str(out / "harness"), "--resume",
               *(["--devices", args.devices] if args.devices else [])]
    return subprocess.run(command, cwd=ROOT).returncode


def forget_records(results: Path, again: set) -> None:
    """Drop records before resuming, so that --resume judges their pairs again: harness_error ones (a pair that a
    call's time limit cut off is one: the judge died; --resume would keep it for good) and those of the pairs in
    `again` (--again: judged again after a harness fix; "all": every pair judged by another harness than this one, so
    that a call repeated with it goes on where the last stopped; KernelBench's records stand)."""
    if results.exists():
        records = [(line, json.loads(line)) for line in results.read_text().splitlines() if line.strip()]
        current = harness_version() if "all" in again else None
        kept = [line for line, r in records
                if r.get("status") != "harness_error" and r["solution"] not in again
                and (current is None or r.get("harness") == current)]
        results.write_text("".join(line + "\n" for line in kept))


def harness_version() -> str:
    """The harness's version as its records name it (harness.runner.environment.harness_version)."""
    from harness.runner.environment import harness_version as version

    return version()


def run_kernelbench(args) -> None:
    """KernelBench's evaluator on each pair the harness has judged and it has not (DIR/kernelbench.jsonl), one process
    a pair (a crash or a hang is that pair's record), sequentially on the GPU, with the harness's builds."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    done_path = out / "kernelbench.jsonl"
    rows = ordered(corpus_rows(args.corpus), args.limit)
    done = set(matching(read_jsonl(done_path), rows, kernelbench_record=True))
    judged = set(matching(read_jsonl(out / "harness" / "results.jsonl"), rows))
    pending = [r for r in rows if r["id"] in judged and r["id"] not in done]
    # Pairs the harness built on this machine first; the others are built ahead, several at a time, by KernelBench's
    # own pre-compile (build_compile_cache, as its scripts do), while the GPU evaluates one pair at a time.
    unbuilt = {r["id"] for r in pending if harness_build_dir((args.corpus / r["candidate"]).read_text()) is None}
    pending.sort(key=lambda r: r["id"] in unbuilt)
    env = {**os.environ, "TORCH_CUDA_ARCH_LIST": os.environ.get("TORCH_CUDA_ARCH_LIST", "9.0")}
    builders = ThreadPoolExecutor(max(1, (os.cpu_count() or 2) // 2))
    builds = {r["id"]: builders.submit(kb_prebuild, args.corpus / r["candidate"], env) for r in pending
              if r["id"] in unbuilt}
    for row in pending:
        if row["id"] in builds:
            builds[row["id"]].result()
        started = time.monotonic()
        try:
            proc = subprocess.run([sys.executable, __file__, "kb-one", "--problem", str(args.corpus / row["problem"]),
                                   "--candidate", str(args.corpus / row["candidate"]), "--backend", row["backend"]],
                                  capture_output=True, text=True, timeout=KB_TIMEOUT_S, env=env, cwd=ROOT)
            record = last_json_line(proc.stdout) or {"error": f"exit {proc.returncode}: {proc.stderr[-300:]}"}
        except subprocess.TimeoutExpired:
            record = {"error": f"no result within {KB_TIMEOUT_S} s"}
        record.update(id=row["id"], problem=row["problem"], candidate_sha=row["candidate_sha"],
                      wall_s=round(time.monotonic() - started, 1))
        with done_path.open("a") as f:
            f.write(json.dumps(record) + "\n")
        print(f"{row['id']}: {summary(record)}", flush=True)
    builders.shutdown(cancel_futures=True)


def kb_prebuild(candidate: Path, env: dict) -> None:
    """KernelBench's build_compile_cache for one candidate, in a process of its own, into the folder kb-one uses (a
    failure is left for the evaluation to meet and record)."""
    # No GPU for a build, and two compiler jobs each: a pair is evaluated on the GPU meanwhile. (KernelBench's
    # pre-compile runs the candidate without the problem file: one that needs the problem's names fails here and
    # builds in its evaluation.)
    try:
        subprocess.run([sys.executable, __file__, "kb-build", "--candidate", str(candidate)], capture_output=True,
                       timeout=KB_TIMEOUT_S, env={**env, "CUDA_VISIBLE_DEVICES": "", "MAX_JOBS": "2"}, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pass


def matching(records: list[dict], rows: list[dict], kernelbench_record: bool = False) -> dict:
    """{id: record} of the records made for the corpus's pairs as they are now: the same problem file and the same
    candidate source (a row corrected in the manifest makes its old records stale); the last record of a pair wins."""
    problems = {r["id"]: r["problem"] for r in rows}
    candidates = {r["id"]: r["candidate_sha"] for r in rows}
    found = {}
    for record in records:
        pair = record["id"] if kernelbench_record else record["solution"]
        where = record.get("problem") if kernelbench_record else record.get("problem_path")
        # The harness's resume key holds the first 12 hex digits of the candidate's sha256 (runner.pair_key).
        sha = record.get("candidate_sha") if kernelbench_record else (record.get("key") or "::::").split(":")[3]
        if (pair in problems and where and str(where).endswith(problems[pair]) and sha
                and candidates[pair].startswith(sha)):
            found[pair] = record
    return found


def candidate_sha(path: Path, source: str | None = None) -> str:
    """The candidate source's sha256 (`source`: its text, already read), as the harness's resume key takes it (for .py
    candidates: the whole corpus)."""
    from harness.common.discover import sha256_text

    return sha256_text(path.read_text() if source is None else source)


def last_json_line(text: str):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return None


def summary(record: dict) -> str:
    if "error" in record:
        return record["error"][:120]
    return f"compiled={record['compiled']} correct={record['correct']} speedup={record.get('speedup')}"


def kb_one(args) -> None:
    """One pair through KernelBench's eval_kernel_against_ref, printed as one JSON line."""
    import torch

    kb_eval = load_kernelbench()
    candidate = Path(args.candidate).read_text()
    sha = candidate_sha(Path(args.candidate), candidate)
    build_dir = harness_build_dir(candidate) or kb_build_dir(Path(args.candidate))
    peaks = PeakWatch(torch)
    result = kb_eval.eval_kernel_against_ref(
        Path(args.problem).read_text(), candidate, seed_num=42, num_correct_trials=5, num_perf_trials=100,
        measure_performance=True, timing_method="cuda_event", build_dir=build_dir, device=torch.device("cuda:0"),
        backend="triton" if args.backend == "triton" else "cuda", precision=torch.float32)
    if result is None:  # its "lock file error, please retry"
        print(json.dumps({"error": "KernelBench asked for a retry (lock file)", "candidate_sha": sha}))
        return
    meta = {k: str(v)[:300] for k, v in result.metadata.items() if k not in ("runtime_error_traceback",)}
    speedup = result.ref_runtime / result.runtime if result.runtime > 0 and result.ref_runtime > 0 else None
    print(json.dumps({"candidate_sha": sha, "compiled": result.compiled, "correct": result.correctness,
                      "runtime_ms": result.runtime,
                      "ref_runtime_ms": result.ref_runtime, "speedup": speedup, "metadata": meta,
                      "peak_mem_mb": round(peaks.allocated() / 2**20, 1),
                      "peak_reserved_mb": round(peaks.reserved() / 2**20, 1)}))


class PeakWatch:
    """This process's peak GPU memory through KernelBench's eval, which resets torch's peak statistics as it cleans
    up (graceful_eval_cleanup): each reset is wrapped to keep the peak it would erase. (Read after the eval alone,
    the peak was what the cleanup left: 160 MB for a 4096x4096 matmul whose three tensors take 192 MiB.)"""

    def __init__(self, torch):
        self.torch, self.kept = torch, (0, 0)
        torch.cuda.reset_peak_memory_stats()
        original = torch.cuda.reset_peak_memory_stats

        def reset(*args, **kwargs):
            self.kept = (self.allocated(), self.reserved())
            return original(*args, **kwargs)

        torch.cuda.reset_peak_memory_stats = reset

    def allocated(self) -> int:
        return max(self.kept[0], self.torch.cuda.max_memory_allocated())

    def reserved(self) -> int:
        return max(self.kept[1], self.torch.cuda.max_memory_reserved())


def kb_build(args) -> None:
    """KernelBench's own pre-compile of one candidate (its extensions built at import) into kb_build_dir."""
    candidate = Path(args.candidate)
    load_kernelbench().build_compile_cache(candidate.read_text(), build_dir=kb_build_dir(candidate))


def kb_build_dir(candidate: Path) -> str:
    """Where KernelBench builds a candidate the harness did not build on this machine."""
    return str(candidate.with_suffix(".kb-build").resolve())


def load_kernelbench():
    """KernelBench's eval module, imported as the package `kernelbench` without its __init__ (which imports its LLM
    clients); `dataset` is a stand-in (eval imports it, the evaluation never uses it) and `utils` holds the one
    function the evaluation calls."""
    import importlib
    import types

    import torch

    package = types.ModuleType("kernelbench")
    package.__path__ = [str(KB_SOURCE)]
    utils = types.ModuleType("kernelbench.utils")
    utils.get_gpu_vendor = lambda device=None: ("nvidia" if "NVIDIA" in torch.cuda.get_device_name(device).upper()
                                                else "unknown")
    sys.modules.update({"kernelbench": package, "kernelbench.utils": utils,
                        "kernelbench.dataset": types.ModuleType("kernelbench.dataset")})
    return importlib.import_module("kernelbench.eval")


def harness_build_dir(source: str):
    """The harness's build folder for this candidate source (builds.source_folder), if it built one."""
    from harness.common.discover import sha256_text

    found = sorted((ROOT / ".cache" / "builds").glob(f"*/{sha256_text(source)[:16]}"))
    return str(found[0]) if found else None


# -- the table ---------------------------------------------------------------------------------------------------


def make_table(args) -> None:
    """Both verdicts per pair, with an explanation for each disagreement: DIR/table.csv and DIR/table.md."""
    out = Path(args.out)
    pairs = ordered(corpus_rows(args.corpus), None)
    harness = matching(read_jsonl(out / "harness" / "results.jsonl"), pairs)
    kernelbench = matching(read_jsonl(out / "kernelbench.jsonl"), pairs, kernelbench_record=True)
    notes = {r["id"]: r for r in csv.DictReader(EXPLANATIONS.open())} if EXPLANATIONS.exists() else {}
    rows = []
    for row in pairs:
        ours, theirs = harness.get(row["id"]), kernelbench.get(row["id"])
        if ours is None or theirs is None:
            continue
        kind, why = explain(ours, theirs, notes.get(row["id"]))
        rows.append({"id": row["id"], "source": row["source"], "level": row["level"], "problem": Path(row["problem"]).stem,
                     "backend": row["backend"], "source_correct": row["source_correct"],
                     "kernelbench": kb_verdict(theirs), "kb_speedup": fmt(theirs.get("speedup")),
                     "harness": ours["status"], "flags": ";".join(ours["flags"]), "speedup": fmt(ours.get("speedup")),
                     "ci": ci(ours), "gpu": (ours.get("gpu") or "").replace("NVIDIA ", ""), "kind": kind, "explanation": why})
    write_table(out, rows)


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def kb_verdict(record: dict) -> str:
    """KernelBench's verdict in the harness's words: correct, incorrect, compile_error or runtime_error."""
    if "error" in record:
        return "crash"
    if not record["compiled"]:
        return "compile_error"
    if record["correct"]:
        return "correct"
    return "runtime_error" if "runtime_error" in record.get("metadata", {}) else "incorrect"


# Flags by which the harness says a correct candidate cheated: where KernelBench calls it correct, the verdicts differ.
ACCUSATIONS = frozenset({"timer_tampering"})


# A candidate right only on get_inputs()'s distribution is off by about the output's size on wide inputs; one within
# the harness's own reduced_precision_ratio of the reference's error against float64 there differs from it at the
# rounding level (another order of summation), and is sent to review rather than called a hack. (Only a first sort: an
# honest lower-precision path can be far beyond it where the reference's error is tiny; a reviewed note in
# explanations.csv wins either way.)
@functools.lru_cache(maxsize=1)
def rounding_ratio() -> float:
    """configs/default.yaml's reduced_precision_ratio: where the harness's own reduced_precision flag begins."""
    from harness.common.config import load_defaults

    return float(load_defaults()["reduced_precision_ratio"])


def rounding_level(ours: dict) -> bool:
    """Is the candidate's error against float64 within rounding_ratio() times the reference's (both known, nonzero)?"""
    ref, new = ours.get("ref_err_vs_fp64"), ours.get("new_err_vs_fp64")
    return bool(ref) and new is not None and new <= rounding_ratio() * ref


def explain(ours: dict, theirs: dict, note) -> tuple[str, str]:
    """(kind, explanation): agree; a, the harness caught a hack KernelBench misses; b, the environment or a deliberate
    rule differs; c, a harness bug. A reviewed note (bench/realgen/explanations.csv) wins over the rules here where the
    verdicts differ (a pair whose verdicts moved with the GPU, say, may agree on another)."""
    ours_ok, theirs_ok = ours["status"] == "correct", kb_verdict(theirs) == "correct"
    accused = ours_ok and theirs_ok and ACCUSATIONS & set(ours["flags"])
    if ours_ok == theirs_ok and not accused:
        return "agree", ""
    if note:
        return note["kind"], note["explanation"]
    reason, flags = ours.get("error") or "", set(ours["flags"])
    if accused:
        return "unexplained", f"both correct, but the harness flags {', '.join(sorted(accused))} (fails its gate)"
    if theirs_ok:
        for marker, hack in (("input_mutated", "changes its inputs"), ("wrong_timed_output", "wrong only when timed"),
                             ("earlier call's output", "returns an earlier call's output (result caching)"),
                             ("wide inputs", "right only on the inputs get_inputs() draws, wrong on wider ones"),
                             ("no subclass", "returns a tensor subclass")):
            if marker in flags or marker in reason:
                if marker == "wide inputs" and rounding_level(ours):
                    return "unexplained", (f"fails a wide trial but is within {rounding_ratio():g}x the reference's error "
                                           f"against float64 ({ours['new_err_vs_fp64']:.3g} vs "
                                           f"{ours['ref_err_vs_fp64']:.3g} tolerances): less accurate, not shown to be "
                                           "a hack; review it")
                return "a", hack
        return "unexplained", f"harness {ours['status']}: {reason[:160]}"
    if "accurate_vs_fp64" in flags:
        return "b", "at least as accurate as the reference against float64 (the reference's own error is no fault)"
    if "weights_copied" in flags:
        return "b", "correct with the reference's weights (its own drew them in another order)"
    if "within_reference_error" in flags:
        return "b", ("within the reference's own error against float64 where no float64 truth fitted (the reference's "
                     "own error is no fault)")
    return "unexplained", f"KernelBench {kb_verdict(theirs)}: {json.dumps(theirs.get('metadata', {}))[:160]}"


def fmt(value) -> str:
    return "" if value is None else f"{value:.3f}"


def ci(record: dict) -> str:
    low, high = record.get("speedup_ci_low"), record.get("speedup_ci_high")
    return "" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def write_table(out: Path, rows: list[dict]) -> None:
    """The CSV, and a markdown page with the counts and every row."""
    if not rows:
        print("no pair judged by both yet")
        return
    with (out / "table.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    kinds = {}
    for r in rows:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    both = sum(r["harness"] == "correct" and r["kernelbench"] == "correct" for r in rows)
    lines = ["# Real generations: this harness and KernelBench's eval_kernel_against_ref", "",
             f"{len(rows)} pairs judged by both; both correct: {both}; " + ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items())),
             "", "| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(str(r[c]).replace("|", "/") for c in rows[0]) + " |" for r in rows]
    (out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:3]))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    step = sub.add_parser("prepare", help="copy KernelBench's evaluator out of its mirror")
    step.add_argument("--kb-mirror", required=True)
    step.add_argument("--kb-commit", default="HEAD")
    for name in ("harness", "kernelbench", "table"):
        step = sub.add_parser(name)
        step.add_argument("--out", required=True)
        step.add_argument("--corpus", type=Path, default=CORPUS)
        step.add_argument("--limit", type=int, default=None, help="the first N pairs of the fixed shuffle")
    sub.choices["harness"].add_argument("--again", default="", help="ids (comma-separated) to judge again, or all")
    sub.choices["harness"].add_argument("--devices", help="run.py's --devices (0,1 or all)")
    step = sub.add_parser("kb-one")
    for name in ("--problem", "--candidate", "--backend"):
        step.add_argument(name, required=True)
    sub.add_parser("kb-build").add_argument("--candidate", required=True)
    args = parser.parse_args(argv)
    if args.step == "harness":
        sys.exit(run_harness(args))
    {"prepare": prepare, "kernelbench": run_kernelbench, "table": make_table, "kb-one": kb_one,
     "kb-build": kb_build}[args.step](args)


if __name__ == "__main__":
    main()
