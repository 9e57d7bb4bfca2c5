#!/bin/bash
# Does a change cost wall time? The same KernelBench A/A pairs judged by an older tree of this harness and by this one,
# on one GPU, interleaved (old, new, old, new), so that the machine's drift cancels:
#   mkdir -p .ab-old && git archive REV harness configs run.py bench/kernelbench_aa.py bench/aa_coverage.py \
#       | tar -x -C .ab-old                                     (here, then carry .ab-old and .corpus)
#   KB=.corpus/kb-head/KernelBench bash bench/commit_ab.sh .ab-old level1/19_ level1/21_ level1/38_ ...
# Leaves $OUT/commitab.tgz (each run's results.jsonl) and prints, per tree, the pairs' wall and phase seconds.
old=$(cd "${1:?OLD_TREE}" && pwd); shift
kb=$(cd "${KB:-.kernelbench/KernelBench}" && pwd)
export PYTHONUNBUFFERED=1
work=$(pwd)/.commitab; rm -rf "$work"; mkdir -p "$work"
for rep in 1 2; do
    for tree in old new; do
        root=$([ "$tree" = old ] && echo "$old" || pwd)
        (cd "$root" && timeout 600 python3 bench/kernelbench_aa.py "$kb" --out "$work/$tree-$rep" --problems "$@") \
            > "$work/$tree-$rep.log" 2>&1
        echo "$tree $rep: exit $? $(wc -l < "$work/$tree-$rep/run/results.jsonl" 2>/dev/null) pairs"
    done
done
python3 - "$work" <<'PY'
import json, sys
from pathlib import Path
for tree in ("old", "new"):
    rows = [json.loads(l) for rep in (1, 2) for f in [Path(sys.argv[1]) / f"{tree}-{rep}" / "run" / "results.jsonl"]
            if f.exists() for l in f.read_text().splitlines()]
    phases = {}
    for r in rows:
        for k, v in (r.get("phases_s") or {}).items():
            if "." not in k or k.startswith("correctness."):
                phases[k] = phases.get(k, 0.0) + v
    print(f"{tree}: {len(rows)} pairs, {sum(r['wall_s'] for r in rows):.1f} s of pair wall, "
          f"{sum(r['status'] == 'correct' for r in rows)} correct, {sum(bool(r.get('tie')) for r in rows)} ties")
    print("   " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(phases.items())))
PY
find "$work" -name '*.pickle' -delete
tar czf "$OUT/commitab.tgz" -C "$work" $(cd "$work" && ls -d */run/results.jsonl *.log 2>/dev/null)
