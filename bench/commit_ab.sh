#!/bin/bash
# Does a change cost wall time? The same KernelBench A/A pairs judged by older trees of this harness and by this one,
# on one GPU, interleaved (each tree once, then each again), so that the machine's drift cancels:
#   mkdir -p .ab-e09 && git archive e09d76d harness configs run.py bench/kernelbench_aa.py bench/aa_coverage.py \
#       | tar -x -C .ab-e09                                     (here, then carry .ab-* and .corpus)
#   KB=.corpus/kb-head/KernelBench bash bench/commit_ab.sh .ab-e09,.ab-c71,. level1/19_ level1/21_ ...
# (`.` is this tree.) Leaves $OUT/commitab.tgz (each run's results.jsonl and log) and prints, per tree, the pairs'
# wall and phase seconds. With AB_GPUS="0 1" (one GPU a tree) the trees of a repetition run side by side, each on a
# GPU of its own, and swap GPUs in the second repetition, so that neither tree keeps the faster GPU.
IFS=, read -r -a trees <<< "${1:?TREES (comma-separated folders; . is this tree)}"; shift
kb=$(cd "${KB:-.kernelbench/KernelBench}" && pwd)
export PYTHONUNBUFFERED=1
work=$(pwd)/.commitab; rm -rf "$work"; mkdir -p "$work"
read -r -a gpus <<< "${AB_GPUS:-}"
judge_tree() {  # TREE REP [GPU]
    local name; name=$(basename "$(cd "$1" && pwd)"); name=${name#.}  # no hidden folders: the tarball globs them
    (cd "$1" && env ${3:+CUDA_VISIBLE_DEVICES=$3} timeout 600 python3 bench/kernelbench_aa.py "$kb" \
        --out "$work/$name-$2" --problems "${problems[@]}") > "$work/$name-$2.log" 2>&1
    echo "$name $2${3:+ (GPU $3)}: exit $? $(wc -l < "$work/$name-$2/run/results.jsonl" 2>/dev/null) pairs"
}
problems=("$@")
for rep in 1 2; do
    for i in "${!trees[@]}"; do
        if [ ${#gpus[@]} -ge ${#trees[@]} ]; then
            judge_tree "${trees[i]}" "$rep" "${gpus[(i + rep) % ${#gpus[@]}]}" &
        else
            judge_tree "${trees[i]}" "$rep"
        fi
    done
    wait
done
python3 - "$work" "${trees[@]}" <<'PY'
import json, sys
from pathlib import Path
work = Path(sys.argv[1])
for tree in sys.argv[2:]:
    name = Path(tree).resolve().name.lstrip(".")
    rows = [json.loads(l) for rep in (1, 2) for f in [work / f"{name}-{rep}" / "run" / "results.jsonl"]
            if f.exists() for l in f.read_text().splitlines()]
    phases = {}
    for r in rows:
        for k, v in (r.get("phases_s") or {}).items():
            if "." not in k or k.startswith("correctness."):
                phases[k] = phases.get(k, 0.0) + v
    print(f"{name}: {len(rows)} pairs, {sum(r['wall_s'] for r in rows):.1f} s of pair wall, "
          f"{sum(r['status'] == 'correct' for r in rows)} correct, {sum(bool(r.get('tie')) for r in rows)} ties")
    print("   " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(phases.items())))
    for r in rows:
        print(f"   {r['problem'][:40]:40s} {r['status']:10s} wall {r['wall_s']:6.1f}  correctness "
              f"{(r.get('phases_s') or {}).get('correctness', 0):5.1f}  speedup {r.get('speedup')}")
PY
find "$work" -name '*.pickle' -delete
tar czf "$OUT/commitab.tgz" -C "$work" $(cd "$work" && ls -d */run/results.jsonl *.log 2>/dev/null)
