#!/bin/bash
# Issue 60's A/A check of KernelBench's ConvTranspose3d problems on a lent GPU machine: level1 58, 61, 68, 70, 72, 73,
# 77 and level2 61, RUNS runs of each (default 5), each run a run.py of its own (fresh judges and workers), over all
# the machine's GPUs; then, with V0=1, KernelBench v0's stateful level3 33_ and 34_ (VanillaRNN) against themselves.
#   KB=.corpus/kb-head/KernelBench KB_V0=.corpus/kb-v0/KernelBench bash bench/convt3d_on_device.sh NAME [RUNS [SECONDS]]
# (carry .corpus). With SECONDS, a run starts only while RUN_S (default 100) of them are left: a run cut short is lost.
# Records: $OUT/NAME-results.jsonl (the runs' results.jsonl one after another), $OUT/NAME.log, and with V0=1
# $OUT/NAME-v0rnn-results.jsonl. Resumed: the whole runs already in bench/results/NAME-results.jsonl (an earlier
# call's, copied there) are kept and not run again, so that the runs can span calls of a one-GPU machine.
name=${1:?NAME}; runs=${2:-5}; deadline=$(( $(date +%s) + ${3:-100000} ))
kb=${KB:-.corpus/kb-head/KernelBench}
export PYTHONUNBUFFERED=1
problems="level1/58_ level1/61_ level1/68_ level1/70_ level1/72_ level1/73_ level1/77_ level2/61_"
carried=bench/results/$name-results.jsonl; per_run=$(wc -w <<< "$problems")
done_runs=$(( $([ -f "$carried" ] && wc -l < "$carried" || echo 0) / per_run ))
head -n $(( done_runs * per_run )) "$carried" 2>/dev/null > "$OUT/$name-results.jsonl"
for run in $(seq $(( done_runs + 1 )) "$runs"); do
    [ $(( $(date +%s) + ${RUN_S:-100} )) -le "$deadline" ] || { echo "run $run: not started, too little time left"; break; }
    rm -rf ".convt-$name-$run"
    python3 bench/kernelbench_aa.py "$kb" --out ".convt-$name-$run" --problems $problems -- --devices all \
        >> "$OUT/$name.log" 2>&1
    cat ".convt-$name-$run/run/results.jsonl" >> "$OUT/$name-results.jsonl"
    echo "run $run: $(wc -l < "$OUT/$name-results.jsonl") records"
done
if [ -n "$V0" ]; then
    rm -rf ".convt-$name-v0"
    python3 bench/kernelbench_aa.py "${KB_V0:-.corpus/kb-v0/KernelBench}" --out ".convt-$name-v0" \
        --problems level3/33_ level3/34_ -- --devices all >> "$OUT/$name.log" 2>&1
    cp ".convt-$name-v0/run/results.jsonl" "$OUT/$name-v0rnn-results.jsonl"
fi
python3 - "$OUT/$name-results.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    blocks = [round(b["speedup"], 3) for b in r.get("blocks") or []]
    print(f"{r['problem'][:44]:44} {r['status']:9} {r.get('speedup') or 0:.3f} [{r.get('speedup_ci_low') or 0:.3f}, "
          f"{r.get('speedup_ci_high') or 0:.3f}] tie={r.get('tie')} blocks={blocks} wall={r.get('wall_s')}")
PY
