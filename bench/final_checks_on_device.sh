#!/bin/bash
# One call's worth of issue 16's GPU checks besides the sweeps, at this checkout, on a lent GPU machine:
#   bench/final_checks_on_device.sh NAME [PART...]     PART: readme, cov5ms, cov14us (default: all three)
# 1. the README's command exactly as typed: python run.py --problem sigmoid (no --device);
# 2. A/A coverage of a ~5 ms sigmoid (--set batch_size=4608) and a ~14 us one (--set batch_size=256 --set dim=16384),
#    20 pairs each (bench/aa_coverage.py, one run of 20 copies).
# Everything comes back in $OUT/NAME.tgz (a lent machine returns a few files only), the log in $OUT/NAME.log.
name=$1; shift
parts=" ${*:-readme cov5ms cov14us} "
export PYTHONUNBUFFERED=1
work=".final-$name"; rm -rf "$work"; mkdir -p "$work"
{
    if [[ $parts == *" readme "* ]]; then
        echo "== python run.py --problem sigmoid"
        timeout 240 python run.py --problem sigmoid; echo "exit status $?"
        run=$(ls -dt results/*/ | head -1)
        [ -n "$run" ] && [ -f "$run/results.jsonl" ] && cp "$run/results.jsonl" "$work/readme-sigmoid-results.jsonl"
    fi
    if [[ $parts == *" cov5ms "* ]]; then
        echo "== coverage, 5 ms"
        timeout 200 python3 bench/aa_coverage.py --problem sigmoid --runs 1 --copies 20 --out "$work/cov-4608x393216" \
            -- --set batch_size=4608
    fi
    if [[ $parts == *" cov14us "* ]]; then
        echo "== coverage, 14 us"
        timeout 280 python3 bench/aa_coverage.py --problem sigmoid --runs 1 --copies 20 --out "$work/cov-256x16384" \
            -- --set batch_size=256 --set dim=16384
    fi
} > "$OUT/$name.log" 2>&1
tar czf "$OUT/$name.tgz" -C "$work" .
echo "$name: $(tar tzf "$OUT/$name.tgz" | wc -l) files"
