#!/bin/bash
# Issue 37's GPU checks in one lent-GPU call, at this checkout (bench/memory_footprint.py for each):
#   bench/memory_on_device.sh NAME [PART...]   PART: test, full, cap40, cap24, cap24small, readme (default: all but readme)
# Everything comes back in $OUT/NAME.tgz, the log in $OUT/NAME.log.
name=$1; shift
parts=" ${*:-test full cap40 cap24 cap24small} "
export PYTHONUNBUFFERED=1
work=".memory-$name"; rm -rf "$work"; mkdir -p "$work"
pairs="--problem sigmoid --solution bench/memory"
{
    nvidia-smi -L; git log --oneline -1 2>/dev/null
    [[ $parts == *" test "* ]] && timeout 300 python3 -m pytest -q -m gpu tests/test_footprint.py tests/test_worker.py
    [[ $parts == *" full "* ]] && timeout 420 python3 bench/memory_footprint.py --out "$work/full" -- $pairs
    [[ $parts == *" cap40 "* ]] && timeout 120 python3 bench/memory_footprint.py --cap-gib 40 --out "$work/cap40" -- $pairs
    [[ $parts == *" cap24 "* ]] && timeout 120 python3 bench/memory_footprint.py --cap-gib 24 --out "$work/cap24" -- $pairs
    [[ $parts == *" cap24small "* ]] && timeout 240 python3 bench/memory_footprint.py --cap-gib 24 \
        --out "$work/cap24-batch1024" -- $pairs --set batch_size=1024
    if [[ $parts == *" readme "* ]]; then
        echo "== python run.py --problem sigmoid"
        timeout 300 python run.py --problem sigmoid; echo "exit status $?"
        run=$(ls -dt results/*/ | head -1); [ -f "$run/results.jsonl" ] && cp "$run/results.jsonl" "$work/readme-results.jsonl"
    fi
} > "$OUT/$name.log" 2>&1
find "$work" -name '*.pickle' -delete  # memory histories: analysed into summary.json, too large to bring back
tar czf "$OUT/$name.tgz" -C "$work" .
echo "$name: $(tar tzf "$OUT/$name.tgz" | wc -l) files"
