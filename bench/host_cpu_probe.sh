#!/bin/bash
# Does the CPU that a GPU pair's workers share move launch-bound A/A pairs? On a lent GPU machine:
#   bench/host_cpu_probe.sh NAME VARIANT...   VARIANT: CPUS or CPUS/unpinned; CPUS a list for taskset (the run's CPUs:
#                                             the workers take the second, harness.common.procs.cpu_for_gpu) or "all";
#                                             /unpinned: workers_share_cpu false (each worker where the kernel puts it)
# Prints the machine's CPU topology and which CPUs take the GPU's interrupts, then runs six launch-bound level3
# problems against themselves (bench/kernelbench_aa.py) once per variant; results in $OUT/NAME.tgz, log $OUT/NAME.log.
name=$1; shift
export PYTHONUNBUFFERED=1
work=".probe-$name"; rm -rf "$work"; mkdir -p "$work"
problems="level3/9_ level3/32_ level3/22_ level3/19_ level3/7_ level3/28_"
{
    lscpu | grep -E "^(CPU\(s\)|Thread|Core|Socket|NUMA|Model name)"
    for cpu in 0 1 2 8 9 15; do
        echo "cpu$cpu siblings $(cat /sys/devices/system/cpu/cpu$cpu/topology/thread_siblings_list 2>/dev/null)"
    done
    grep -iE "nvidia|CPU0" /proc/interrupts | cut -c1-200 | head -8
    i=0
    for variant in "$@"; do
        i=$((i + 1))
        echo "== variant $i: $variant"
        cpus=${variant%/unpinned}; config=()
        if [ "$cpus" = all ]; then pin=(); else pin=(taskset -c "$cpus"); fi
        if [ "$cpus" != "$variant" ]; then
            echo "workers_share_cpu: false" > "$work/unpinned.yaml"; config=(-- --config "$work/unpinned.yaml")
        fi
        timeout 280 "${pin[@]}" python3 bench/kernelbench_aa.py .kernelbench/KernelBench --out "$work/v$i" \
            --problems $problems "${config[@]}" 2>&1 | tail -12
        cp "$work/v$i/run/results.jsonl" "$work/v$i-results.jsonl" 2>/dev/null
    done
} > "$OUT/$name.log" 2>&1
tar czf "$OUT/$name.tgz" -C "$work" $(cd "$work" && ls *-results.jsonl 2>/dev/null)
echo "$name: $(tar tzf "$OUT/$name.tgz" | wc -l) files"
