#!/bin/bash
# Issue 37's GPU checks in one lent-GPU call, at this checkout (bench/memory_footprint.py for each):
#   bench/memory_on_device.sh NAME [PART...]   PART: full, fullaa, cap40, test, cap24small, cap24, readme
#   (default: all but readme, in that order)
# What is done comes back in $OUT/NAME.tgz after each part (a call cut off keeps the parts before), the log in
# $OUT/NAME.log.
name=$1; shift
parts=${*:-full cap40 test cap24small cap24}
export PYTHONUNBUFFERED=1
work=".memory-$name"; rm -rf "$work"; mkdir -p "$work"
pairs="--problem sigmoid --solution bench/memory"
pack() {
    find "$work" -name '*.pickle' -delete  # memory histories: analysed into summary.json, too large to bring back
    tar czf "$OUT/$name.tgz" -C "$work" .
}
{
    nvidia-smi -L
    for part in $parts; do
        echo "== $part $(date +%T)"
        case $part in
            full) timeout 300 python3 bench/memory_footprint.py --out "$work/full" -- $pairs ;;
            fullaa) timeout 200 python3 bench/memory_footprint.py --out "$work/full-aa" \
                -- --problem sigmoid --solution bench/memory/aa_sigmoid.py ;;
            cap40) timeout 90 python3 bench/memory_footprint.py --cap-gib 40 --out "$work/cap40" -- $pairs ;;
            cap24) timeout 90 python3 bench/memory_footprint.py --cap-gib 24 --out "$work/cap24" -- $pairs ;;
            cap24small) timeout 180 python3 bench/memory_footprint.py --cap-gib 24 --out "$work/cap24-batch1024" \
                -- $pairs --set batch_size=1024 ;;
            test) timeout 180 python3 -m pytest -q -m gpu tests/test_footprint.py tests/test_worker.py 2>&1 \
                | tee "$work/pytest-gpu-memory.log" ;;
            readme)
                timeout 300 python run.py --problem sigmoid; echo "exit status $?"
                run=$(ls -dt results/*/ | head -1)
                [ -f "$run/results.jsonl" ] && cp "$run/results.jsonl" "$work/readme-results.jsonl" ;;
        esac
        pack
    done
    echo "== done $(date +%T)"
} > "$OUT/$name.log" 2>&1
pack
echo "$name: $(tar tzf "$OUT/$name.tgz" | wc -l) files"
