#!/bin/bash
# Which host setting slows down or jitters launch-bound pairs on a GPU machine? A/A pairs of the given KernelBench
# problems under four settings, interleaved, twice:
#   default   the harness as it is
#   tcache    glibc's thread cache back on (GLIBC_TUNABLES=glibc.malloc.tcache_count=7, glibc's default)
#   unpinned  workers not pinned to one CPU (workers_share_cpu: false)
#   both      tcache on and unpinned
#   bench/host_ab.sh level3/4_LeNet5 level3/9_ResNet18 ...
# Leaves each run's results (hostab-SETTING-REP.jsonl), logs and the CPU layout (lscpu.txt) in $OUT/hostab.tgz: a lent
# machine brings back a few files only.
export PYTHONUNBUFFERED=1
work=.hostab-out; rm -rf "$work"; mkdir -p "$work"
lscpu -e > "$work/lscpu.txt" 2>&1; nproc >> "$work/lscpu.txt"
printf 'workers_share_cpu: false\n' > .hostab-unpinned.yaml
for rep in 1 2; do
    for setting in default tcache unpinned both; do
        tunables=glibc.malloc.tcache_count=0; config=()
        case $setting in tcache|both) tunables=glibc.malloc.tcache_count=7;; esac
        case $setting in unpinned|both) config=(--config=.hostab-unpinned.yaml);; esac
        GLIBC_TUNABLES=$tunables python3 bench/kernelbench_aa.py .kernelbench/KernelBench --out ".hostab-$setting-$rep" \
            --problems "$@" "${config[@]}" > "$work/hostab-$setting-$rep.log" 2>&1
        cp ".hostab-$setting-$rep/run/results.jsonl" "$work/hostab-$setting-$rep.jsonl"
        echo "$setting $rep done: $(wc -l < "$work/hostab-$setting-$rep.jsonl") pairs"
    done
done
tar czf "$OUT/hostab.tgz" -C "$work" .
