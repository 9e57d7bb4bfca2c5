#!/usr/bin/env python3
"""Which GPU kernels each side of an A/A pair runs, in the harness's own workers: for a pair that leans (level3
27_RegNet 0.984-0.988 since PyTorch's default TF32 flags, 40_LayerNorm), are the two workers running different
kernels (an algorithm choice) or the same kernels at different speeds (placement)?

    python3 bench/kernel_names_probe.py KERNELBENCH_DIR --out DIR --problems level3/27_ level1/40_

Each problem file is copied with a hook on Model.forward that profiles (torch.profiler, CUDA kernels) the 12th and
60th call of each class (Model: the reference's worker; ModelNew: the candidate's) and writes the kernels' names and
times, the math flags and the inputs' and parameters' address alignment to DIR/calls/. The A/A pairs then run through
bench/kernelbench_aa.py (the harness's --manifest path), and the table compares the two sides, kernel by kernel.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROFILED_CALLS = (12, 60)

HOOK = '''

# --- bench/kernel_names_probe.py: profile two calls of each class ---
def _probe_hook(_calls_dir, _profiled):
    import json, os, torch
    forward, counts = Model.forward, {}

    def alignment(ptr):
        return next((a for a in (4096, 1024, 512, 256, 128, 64, 32, 16) if ptr % a == 0), ptr % 16)

    def probed(self, *args, **kwargs):
        role = type(self).__name__
        n = counts[role] = counts.get(role, 0) + 1
        if n not in _profiled:
            return forward(self, *args, **kwargs)
        record = {"role": role, "call": n, "pid": os.getpid(),
                  "flags": {"cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
                            "matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                            "cudnn.benchmark": torch.backends.cudnn.benchmark,
                            "cudnn.deterministic": torch.backends.cudnn.deterministic,
                            "matmul_precision": torch.get_float32_matmul_precision(),
                            "training": self.training},
                  "inputs": [[list(a.shape), str(a.dtype), alignment(a.data_ptr()), a.is_contiguous()]
                             for a in args if isinstance(a, torch.Tensor)],
                  "params": [alignment(p.data_ptr()) for p in self.parameters()][:8]}
        try:
            from torch.profiler import ProfilerActivity, profile
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                out = forward(self, *args, **kwargs)
                torch.cuda.synchronize()
            record["kernels"] = [[e.name, getattr(e, "device_time", None) or getattr(e, "cuda_time", 0.0)]
                                 for e in prof.events() if e.device_type.name == "CUDA"]
        except Exception as exc:  # the profiler refused (the candidate's worker is confined): say so
            record["error"] = f"{type(exc).__name__}: {exc}"
            out = forward(self, *args, **kwargs)
        with open(os.path.join(_calls_dir, f"{role}-{n}-{os.getpid()}.json"), "w") as f:
            json.dump(record, f)
        return out

    Model.forward = probed


_probe_hook(CALLS_DIR, PROFILED)
'''


def hooked_copy(problem: Path, kb_root: Path, out_kb: Path, calls_dir: Path) -> Path:
    """The problem file with the hook appended, at its level's place under out_kb."""
    target = out_kb / problem.relative_to(kb_root)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(problem.read_text() + HOOK.replace("CALLS_DIR", repr(str(calls_dir))).replace("PROFILED", repr(PROFILED_CALLS)))
    return target


def compare(calls_dir: Path, stem: str) -> list[str]:
    """Lines comparing the reference's (Model) and the candidate's (ModelNew) profiled calls of one problem."""
    lines = []
    for n in PROFILED_CALLS:
        sides = {}
        for role in ("Model", "ModelNew"):
            # The worker's own file: the judge's float64 truth calls Model too, but never PROFILED_CALLS[-1] times
            last = sorted(calls_dir.glob(f"{stem}/{role}-{PROFILED_CALLS[-1]}-*.json"))
            pid = last[-1].stem.rsplit("-", 1)[1] if last else "*"
            found = sorted(calls_dir.glob(f"{stem}/{role}-{n}-{pid}.json"))
            sides[role] = json.loads(found[-1].read_text()) if found else None
        ref, new = sides["Model"], sides["ModelNew"]
        if not ref or not new:
            lines.append(f"  call {n}: missing ({', '.join(r for r, s in sides.items() if not s)})")
            continue
        for key in ("flags", "inputs", "params", "error"):
            same = ref.get(key) == new.get(key)
            lines.append(f"  call {n} {key}: {'same' if same else 'DIFFER'}: ref {ref.get(key)}"
                         + ("" if same else f" | new {new.get(key)}"))
        rk, nk = ref.get("kernels", []), new.get("kernels", [])
        names_same = [k[0] for k in rk] == [k[0] for k in nk]
        lines.append(f"  call {n} kernels: {len(rk)} vs {len(nk)}, names {'same' if names_same else 'DIFFER'}; "
                     f"total {sum(k[1] for k in rk):.1f} vs {sum(k[1] for k in nk):.1f} us")
        if names_same:
            for (name, rt), (_, nt) in zip(rk, nk):
                if rt and abs(nt / rt - 1) > 0.03 and max(rt, nt) > 5:
                    lines.append(f"    {name[:90]}: {rt:.1f} vs {nt:.1f} us")
        else:
            for side, kernels in (("ref", rk), ("new", nk)):
                lines += [f"    {side} {name[:90]}: {t:.1f} us" for name, t in kernels]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernelbench_dir", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--problems", nargs="+", required=True, help="level/prefix, e.g. level3/27_")
    args = parser.parse_args()
    out = args.out.resolve()
    out_kb, lines = out / "kb", []
    for prefix in args.problems:
        for problem in sorted(args.kernelbench_dir.glob(prefix + "*.py")):
            calls_dir = out / "calls" / problem.stem
            calls_dir.mkdir(parents=True, exist_ok=True)
            hooked_copy(problem, args.kernelbench_dir, out_kb, calls_dir)
    subprocess.run([sys.executable, str(ROOT / "bench" / "kernelbench_aa.py"), str(out_kb), "--out", str(out / "aa"),
                    "--problems", *args.problems], cwd=ROOT, check=False)
    results = out / "aa" / "run" / "results.jsonl"
    records = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    for stem in sorted(p.name for p in (out / "calls").iterdir()):
        record = next((r for r in records if r.get("problem") == stem), {})
        lines.append(f"{stem}: {record.get('status')} speedup {record.get('speedup')} "
                     f"[{record.get('speedup_ci_low')}, {record.get('speedup_ci_high')}] "
                     f"ref {record.get('ref_ms')} ms new {record.get('new_ms')} ms")
        lines += compare(out / "calls", stem)
    (out / "probe.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
