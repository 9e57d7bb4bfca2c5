#!/bin/bash
# Does a GPU spin long enough for the host to queue a whole call (launch_lead_us) take the host's speed out of
# launch-bound A/A pairs? On a lent GPU machine:
#   bench/lead_probe.sh NAME SECONDS_EACH LEAD_US... -- PROBLEM...
# Runs the problems against themselves (bench/kernelbench_aa.py) once per lead; results in $OUT/NAME.tgz, log
# $OUT/NAME.log.
name=$1; seconds=$2; shift 2
leads=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do leads+=("$1"); shift; done
[ "$1" = "--" ] && [ $# -gt 1 ] && [ ${#leads[@]} -gt 0 ] || { echo "usage: $0 NAME SECONDS_EACH LEAD_US... -- PROBLEM..." >&2; exit 2; }
shift
export PYTHONUNBUFFERED=1
work=".probe-$name"; rm -rf "$work"; mkdir -p "$work"
{
    i=0
    for lead in "${leads[@]}"; do
        i=$((i + 1))
        echo "== run $i: launch_lead_us $lead"
        echo "launch_lead_us: $lead" > "$work/lead$i.yaml"
        timeout "$seconds" python3 bench/kernelbench_aa.py .kernelbench/KernelBench --out "$work/v$i" \
            --problems "$@" -- --config "$work/lead$i.yaml" 2>&1 | tail -14
        cp "$work/v$i/run/results.jsonl" "$work/lead$lead-run$i-results.jsonl" 2>/dev/null
    done
} > "$OUT/$name.log" 2>&1
tar czf "$OUT/$name.tgz" -C "$work" $(cd "$work" && ls *-results.jsonl 2>/dev/null)
echo "$name: $(tar tzf "$OUT/$name.tgz" | wc -l) files"
