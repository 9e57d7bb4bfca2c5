#!/bin/bash
# KernelBench problems against themselves once per config variant (launch_lead_us, host_spin_ms, ...), on a lent GPU
# machine:
#   bench/config_probe.sh NAME SECONDS_EACH 'YAML'... -- PROBLEM...
# Each YAML is one variant's config file, its lines separated by ';' ('launch_lead_us: 30000', 'host_spin_ms: 10;
# launch_lead_us: 100'). Runs bench/kernelbench_aa.py once per variant; results in $OUT/NAME.tgz
# (vI-results.jsonl, vI.yaml), log $OUT/NAME.log.
name=$1; seconds=$2; shift 2
variants=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do variants+=("$1"); shift; done
[ "$1" = "--" ] && [ $# -gt 1 ] && [ ${#variants[@]} -gt 0 ] || { echo "usage: $0 NAME SECONDS_EACH 'YAML'... -- PROBLEM..." >&2; exit 2; }
shift
export PYTHONUNBUFFERED=1
work=".probe-$name"; rm -rf "$work"; mkdir -p "$work"
{
    i=0
    for variant in "${variants[@]}"; do
        i=$((i + 1))
        echo "== run $i: $variant"
        tr ';' '\n' <<< "$variant" | sed 's/^ *//' > "$work/v$i.yaml"
        timeout "$seconds" python3 bench/kernelbench_aa.py .kernelbench/KernelBench --out "$work/v$i" \
            --problems "$@" -- --config "$work/v$i.yaml" 2>&1 | tail -14
        cp "$work/v$i/run/results.jsonl" "$work/v$i-results.jsonl" 2>/dev/null
    done
} > "$OUT/$name.log" 2>&1
tar czf "$OUT/$name.tgz" -C "$work" $(cd "$work" && ls v*.yaml *-results.jsonl 2>/dev/null)
echo "$name: $(tar tzf "$OUT/$name.tgz" | wc -l) files"
