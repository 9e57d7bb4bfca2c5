#!/usr/bin/env python3
"""Issue 37's table: KernelBench A/A pairs judged or skipped at each GPU memory cap, from the sweeps' results.jsonl.
    python3 bench/cap_table.py CAP=RESULTS.jsonl [CAP=RESULTS.jsonl ...] [--out TABLE.md]
e.g. `80=bench/results/aa80-X-results.jsonl 40=... 24=...`. Per cap: pairs, correct ties, correct but no tie, skipped
(and how fast), and every other status with its pairs; then each pair that is neither a tie nor skipped, by name. A
pair that is not a tie or skipped at any cap misses the issue's bar ("judged, A/A correct and a tie, or skipped in
seconds with the figures")."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path


def read(path: Path) -> list[dict]:
    """The sweep's records, the last of each pair where a resumed sweep has two."""
    rows = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            rows[(record["problem_path"] or record["problem"], record["solution"])] = record
    return list(rows.values())


def summary(rows: list[dict]) -> dict:
    """Counts of a cap's outcomes."""
    ties = [r for r in rows if r["status"] == "correct" and r.get("tie")]
    skipped = [r for r in rows if r["status"] == "skipped"]
    others = Counter(r["status"] for r in rows if r["status"] not in ("correct", "skipped"))
    skip_s = [r["wall_s"] for r in skipped if r.get("wall_s") is not None]
    return {"pairs": len(rows), "ties": len(ties),
            "correct, no tie": sum(r["status"] == "correct" and not r.get("tie") for r in rows),
            "skipped": len(skipped), "slowest skip s": round(max(skip_s), 1) if skip_s else None,
            "median skip s": round(statistics.median(skip_s), 1) if skip_s else None,
            "others": ", ".join(f"{n} {status}" for status, n in sorted(others.items())) or "none",
            "harnesses": ", ".join(sorted({str(r.get("harness")) for r in rows}))}


def misses(rows: list[dict]) -> list[str]:
    """Pairs that miss the bar: neither a correct tie nor skipped."""
    out = []
    for r in sorted(rows, key=lambda r: r["problem"]):
        if r["status"] == "skipped" or (r["status"] == "correct" and r.get("tie")):
            continue
        speed = f" {r['speedup']:.3f} [{r['speedup_ci_low']:.3f}, {r['speedup_ci_high']:.3f}]" if r.get("speedup") else ""
        out.append(f"{r['problem']}: {r['status']}{speed} {(r.get('error') or '')[:160]}".rstrip())
    return out


def table(caps: dict) -> str:
    """The markdown table and the misses per cap."""
    sums = {cap: summary(rows) for cap, rows in caps.items()}
    keys = list(next(iter(sums.values())))
    lines = ["| cap (GiB) | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    lines += [f"| {cap} | " + " | ".join(str(s[k]) for k in keys) + " |" for cap, s in sums.items()]
    for cap, rows in caps.items():
        missed = misses(rows)
        lines += ["", f"Not a tie and not skipped at {cap} GiB: {len(missed)}"] + [f"- {m}" for m in missed]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("caps", nargs="+", help="CAP=RESULTS.jsonl, e.g. 24=bench/results/aa24-x-results.jsonl")
    parser.add_argument("--out", type=Path, help="write the table here (else print it)")
    args = parser.parse_args(argv)
    caps = {}
    for item in args.caps:
        cap, sep, path = item.partition("=")
        if not sep or not Path(path).is_file():
            parser.error(f"{item!r}: expected CAP=RESULTS.jsonl with an existing file")
        caps[cap] = read(Path(path))
    text = table(caps)
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
