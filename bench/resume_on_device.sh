#!/bin/bash
# One call's share of a KernelBench A/A sweep on a lent GPU machine, resumed from the results of earlier calls.
#   bench/resume_on_device.sh NAME SECONDS [kernelbench_aa.py args...]
# With CAP_GIB=N, bench/hold_gpu.py holds all but N GiB of each visible GPU for the sweep (issue 37's capped runs);
# KB=DIR is KernelBench's problem folder (default .kernelbench/KernelBench, carried).
# Reads bench/results/NAME-results.jsonl if present (the earlier calls' results, as --resume continues from them)
# and bench/results/NAME-sizes.json (--small's sizes, chosen by the first call: the same pairs on every machine),
# runs bench/kernelbench_aa.py on .kernelbench/KernelBench (carried) for at most SECONDS, and leaves the results
# so far in $OUT/NAME-results.jsonl and its log in $OUT/NAME.log.
name=$1; seconds=$2; shift 2
export PYTHONUNBUFFERED=1
mkdir -p ".kbrun-$name/run"
# A machine still warm from the last call has that call's results already: never replace them with fewer.
carried="bench/results/$name-results.jsonl"; here=".kbrun-$name/run/results.jsonl"
if [ -f "$carried" ] && [ "$(wc -l < "$carried")" -gt "$( [ -f "$here" ] && wc -l < "$here" || echo 0)" ]; then
    cp "$carried" "$here"
fi
[ -f "bench/results/$name-sizes.json" ] && [ ! -f ".kbrun-$name/sizes.json" ] && cp "bench/results/$name-sizes.json" ".kbrun-$name/sizes.json"
if [ -n "$CAP_GIB" ]; then
    python3 bench/hold_gpu.py --gib "$CAP_GIB" > ".kbrun-$name/held" & holder=$!
    until grep -q ready ".kbrun-$name/held" || ! kill -0 $holder 2>/dev/null; do sleep 1; done
    echo "$name: capped to $CAP_GIB GiB a GPU, held bytes: $(tr '\n' ' ' < ".kbrun-$name/held")"
fi
# The records so far into $OUT every 20 s as well: a call the device's limit ends early (less device time left than
# SECONDS) brings back what it judged (session 49's last call came back with its log alone).
# Whole lines only (the run may be writing one), swapped in at once.
( while sleep 20 && kill -0 $$ 2>/dev/null; do [ -f "$here" ] && head -n "$(wc -l < "$here")" "$here" > "$OUT/.$name-partial" \
      && mv "$OUT/.$name-partial" "$OUT/$name-results.jsonl"; done ) & copier=$!
timeout "$seconds" python3 bench/kernelbench_aa.py "${KB:-.kernelbench/KernelBench}" --out ".kbrun-$name" "$@" > "$OUT/$name.log" 2>&1
kill $copier
[ -n "$holder" ] && kill $holder
cp ".kbrun-$name/run/results.jsonl" "$OUT/$name-results.jsonl"
[ -f ".kbrun-$name/sizes.json" ] && cp ".kbrun-$name/sizes.json" "$OUT/$name-sizes.json"
[ -f ".kbrun-$name/pairs.csv" ] && cp ".kbrun-$name/pairs.csv" "$OUT/$name-pairs.csv"
echo "$name: $(wc -l < "$OUT/$name-results.jsonl") pairs"
