#!/bin/bash
# Issue 60's GPU checks, one PART per call of a lent machine (each fits its 10 minutes; carry .corpus, and for `ab`
# the older tree too):
#   bash bench/issue60_on_device.sh COMMIT diag|role|noisy|flush|launch|head|v0|v0check|convt|convtab|ab [SECONDS]
#   diag   KernelBench v0's level2 61_, 29_ and level1 100_ against themselves, and eight of its microsecond level1
#          problems (on a second GPU where there is one): each pair's
#          ratios split by the side that opened the round (round_order): do they lean by the order? Then
#          bench/tiny_noise_probe.py (a microsecond call's spread, sample to sample)
#   role   bench/role_probe.py on four ConvTranspose3d problems (one a GPU): does a lean follow which worker started
#          first, or which ran the correctness trials?
#   head   today's KernelBench levels 1-3 A/A on every GPU of the machine, resumed from bench/results/
#          kernelbench-aa-h200-levels123-COMMIT-results.jsonl (copy each call's records there before the next)
#   v0     the same for KernelBench v0 (6500bbc): kernelbench-v0-aa-h200-levels123-COMMIT
#   v0check  the first share of that same record: v0's level2 and level1 19-32 (where session 57's last changes
#          should show: level2's ~0.1 ms forwards sorted by GPU time, the microsecond pairs), so that a failed check
#          costs one call, and a passed one is part of the record (`v0` then resumes it)
#   noisy  19 of the 20 v0 pairs that were no ties at 083eb4a (all but 41_GRUBirectional, 150 ms a call), on every GPU at once as in
#          the sweep: does keeping the timing CPUs free bring their spread down under a loaded host?
#   flush  bench/flush_placement_probe.py: does a microsecond call's per-process offset follow where the flush buffer
#          or the inputs lie?
#   launch bench/window_noise_probe.py (idle host) as it is, then under the harness's worker environment (malloc
#          tunables, passive OpenMP threads): is that why a worker launches a graph in 120 us, a process of its own in
#          7-24 us (session 56)?
#   convt  bench/convt3d_on_device.sh: the eight ConvTranspose3d problems, 5 runs each, fresh workers every run,
#          each run started only while 100 of SECONDS are left, resumed from
#          bench/results/convt3d-aa-h200-COMMIT-results.jsonl (whole runs; copy it there between calls)
#   convtab  `convt` on GPUs 2 and 3 beside `ab` on GPUs 0 and 1 (each tree on a GPU of its own, swapped in the second
#          repetition): both in one call of a 4-GPU machine
#   ab     sweep wall time against 25bfc02 on one GPU (bench/commit_ab.sh; made here first by
#          `mkdir -p .ab-25bfc02 && git archive 25bfc02 harness configs run.py bench/kernelbench_aa.py
#          bench/aa_coverage.py | tar -x -C .ab-25bfc02`, carried): every 25th problem of levels 1-3 and the
#          ConvTranspose3d ones, each tree twice, interleaved
# COMMIT names the records (the device's git may not hold it). KB and KB_V0 default to .corpus/kb-head and kb-v0.
commit=${1:?COMMIT}; part=${2:?PART}; seconds=${3:-540}
head=${KB:-.corpus/kb-head/KernelBench}; v0=${KB_V0:-.corpus/kb-v0/KernelBench}
export PYTHONUNBUFFERED=1
nvidia-smi -L
case $part in
diag)
    gpus=$(nvidia-smi -L | wc -l)
    sets=("level2/61_ level2/29_ level1/100_" "level1/19_ level1/20_ level1/24_ level1/26_ level1/28_ level1/30_ level1/32_ level1/41_")
    for run in 1 2; do  # side by side where the machine has two GPUs
        rm -rf ".diag-$run"
        CUDA_VISIBLE_DEVICES=$(( (run - 1) % gpus )) timeout $(( gpus > 1 ? 240 : 170 )) python3 bench/kernelbench_aa.py "$v0" --out ".diag-$run" \
            --problems ${sets[run - 1]} > "$OUT/diag-$run.log" 2>&1 &
        [ "$gpus" -gt 1 ] || wait
    done
    wait
    CUDA_VISIBLE_DEVICES=0 timeout 120 python3 bench/tiny_noise_probe.py > "$OUT/tiny-noise.txt" 2>&1
    cat .diag-1/run/results.jsonl .diag-2/run/results.jsonl > "$OUT/diag-v0-$commit-results.jsonl"
    python3 - "$OUT/diag-v0-$commit-results.jsonl" <<'PY'
import json, math, statistics, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    order = r.get("round_order") or ""
    ratios = [math.log(a / b) for a, b in zip(r["ref_samples_ms"], r["new_samples_ms"])]
    split = {s: [x for x, o in zip(ratios, order) if o == s] for s in "RN"}
    said = {s: round(math.exp(statistics.median(v)), 3) if v else None for s, v in split.items()}
    print(f"{r['problem'][:34]:34} {r['speedup']:.3f} [{r['speedup_ci_low']:.3f}, {r['speedup_ci_high']:.3f}] "
          f"blocks {[round(b['speedup'], 3) for b in r.get('blocks') or []]} R-first {len(split['R'])}: {said['R']} "
          f"N-first {len(split['N'])}: {said['N']}")
PY
    ;;
role)
    problems=("$head/level2/61_ConvTranspose3d_ReLU_GroupNorm.py" "$head/level1/68_conv_transposed_3D__square_input__asymmetric_kernel.py"
              "$v0/level1/61_conv_transposed_3D__square_input__square_kernel.py" "$v0/level2/61_ConvTranspose3d_ReLU_GroupNorm.py")
    gpus=$(nvidia-smi -L | wc -l)
    for i in "${!problems[@]}"; do  # one problem a GPU, side by side
        # in ceil(problems / gpus) waves, each its share of SECONDS
        CUDA_VISIBLE_DEVICES=$(( i % gpus )) timeout $(( seconds / ((${#problems[@]} + gpus - 1) / gpus) )) \
            python3 bench/role_probe.py "${problems[i]}" --repeats 2 --rounds 20 \
            > "$OUT/role-$i.txt" 2>&1 &
        [ $(( (i + 1) % gpus )) -ne 0 ] || wait
    done
    wait
    cat "$OUT"/role-*.txt ;;
head) KB=$head bash bench/resume_on_device.sh "kernelbench-aa-h200-levels123-$commit" "$seconds" --levels 1,2,3 -- --devices all ;;
v0) KB=$v0 bash bench/resume_on_device.sh "kernelbench-v0-aa-h200-levels123-$commit" "$seconds" --levels 1,2,3 -- --devices all ;;
v0check) KB=$v0 bash bench/resume_on_device.sh "kernelbench-v0-aa-h200-levels123-$commit" "$seconds" \
        --problems level2/ $(for i in $(seq 19 32); do printf "level1/%s_ " "$i"; done) -- --devices all ;;
noisy)
    rm -rf .noisy
    timeout "$seconds" python3 bench/kernelbench_aa.py "$v0" --out .noisy --problems level1/19_ level1/21_ level1/22_ \
        level1/23_ level1/25_ level1/26_ level1/27_ level1/29_ level1/30_ level1/61_ level1/67_ level1/74_ \
        level1/100_ level2/14_ level2/28_ level2/37_ level2/55_ level2/62_ level3/9_ -- --devices all \
        > "$OUT/noisy.log" 2>&1
    cp .noisy/run/results.jsonl "$OUT/noisy-v0-$commit-results.jsonl" ;;
flush) CUDA_VISIBLE_DEVICES=0 timeout "$seconds" python3 bench/flush_placement_probe.py --processes 4 --placements 6 \
        | tee "$OUT/flush-placement-$commit.txt" ;;
launch)
    CUDA_VISIBLE_DEVICES=0 timeout 90 python3 bench/window_noise_probe.py --samples 100 > "$OUT/launch-plain.txt" 2>&1
    env $(python3 -c 'from harness.runner.judges import judge_env; print(" ".join(f"{k}={v}" for k, v in judge_env("cuda").items() if k in ("OMP_WAIT_POLICY", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")))') \
        CUDA_VISIBLE_DEVICES=0 timeout 90 python3 bench/window_noise_probe.py --samples 100 > "$OUT/launch-harness-env.txt" 2>&1
    cat "$OUT"/launch-*.txt ;;
convt) KB=$head timeout $(( seconds + 30 )) bash bench/convt3d_on_device.sh "convt3d-aa-h200-$commit" 5 "$seconds" ;;
ab|convtab)
    sample=$(cd "$head" && ls level1/*.py level2/*.py level3/*.py | sort -t/ -k2 -n | awk 'NR % 25 == 1' \
             | sed 's/\.py$//' | sed 's/\([0-9]*_\).*/\1/')
    if [ "$part" = convtab ]; then
        (CUDA_VISIBLE_DEVICES=2,3 KB=$head timeout "$seconds" bash bench/convt3d_on_device.sh "convt3d-aa-h200-$commit" 5 \
            > "$OUT/convt.out" 2>&1) &
        export AB_GPUS="0 1"
    else
        export CUDA_VISIBLE_DEVICES=0
    fi
    KB=$head timeout "$seconds" bash bench/commit_ab.sh .ab-25bfc02,. $sample level1/58_ level1/68_ level1/70_ level2/61_
    wait
    [ "$part" = convtab ] && cat "$OUT/convt.out" ;;
*) echo "PART is diag, role, noisy, flush, launch, head, v0, v0check, convt, convtab or ab"; exit 2 ;;
esac
