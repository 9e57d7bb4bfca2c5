#!/bin/bash
# Issues 62 and 63's GPU checks, one PART per call of a lent machine (carry .corpus; for `service`, .whl too):
#   bash bench/issue62_on_device.sh NAME one|two|aa|service|scale|presets|readme [SECONDS]
#   one      the README's `python run.py --problem sigmoid` as typed, then `pytest -m gpu` part a (adversarial,
#            isolation, footprint, probe, worker)
#   two      `pytest -m gpu` part b (test_gpu, the seeds' solutions), then the A/A sample for what is left of SECONDS
#   aa       the A/A sample alone, resumed: every 5th problem of today's KernelBench levels 1-3 (50) against itself,
#            in results/aa-NAME (ignored, so a warm machine keeps it between calls; it also comes back in $OUT)
#   service  bench/service_throughput.py, rl then default preset, each on a batch of level-1 A/A pairs and public
#            generations by turns (.corpus/realgen, made by bench/realgen_corpus.py; PAIRS_RL=64, PAIRS_DEFAULT=40),
#            judged whole; SECONDS split between them in that ratio as a cap; DEVICES=0,1: the service on two GPUs;
#            MIX=0: A/A pairs only (the mix is bound by its builds, so one GPU against two is measured on A/A pairs)
#   scale    one GPU against two: the same PAIRS (60) level-1 A/A pairs, rl preset, judged whole by a service on
#            GPU 0, then by one on GPUs 0,1; then the README's `python run.py --problem sigmoid` if time is left
#            (SCALE_GPUS=0: GPU 0 alone, no README command)
#   contention  why two GPUs give less than twice one (needs two): bench/driver_contention.py (driver calls on one
#            GPU alone, then on both at once), then two services, one a GPU, each judging PAIRS (40) level-1 A/A pairs
#            at once, then one service on both; vmstat and the CPU clock throughout; all in NAME-contention.tgz
#   profile  the same question on one machine: PAIRS A/A pairs on GPU 0 alone, then on both at once (a service a
#            GPU), then 20 on GPU 0 under py-spy (its wheel in .whl/prof; bench/pyspy_summary.py reads its output);
#            all in NAME-profile.tgz
#   presets  `pytest -m gpu` on the GPU's cheats under --preset rl through the library API and the service
#            (tests/adversarial/test_presets_gpu.py)
#   readme   the README's `python run.py --problem sigmoid` as typed
# Logs and records come back in $OUT as NAME-PART*. lscpu's CPU topology first.
name=${1:?NAME}; part=${2:?PART}; seconds=${3:-560}
kb=${KB:-.corpus/kb-head/KernelBench}
export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
start=$SECONDS
nvidia-smi -L
lscpu | grep -E "^(Model name|Thread|Core|Socket|NUMA node)" | tr -s " "
left() { echo $(( seconds - (SECONDS - start) )); }
gpu_tests() {  # pytest -m gpu over FILES for at most $1 seconds (SIGINT: pytest still reports and writes its XML)
    local limit=$1; shift
    { timeout -s INT -k 20 "$limit" python3 -m pytest -v -m gpu -p no:cacheprovider --durations=0 \
          --junitxml="$OUT/$name-$part.xml" "$@"; echo "exit status $?"; } > "$OUT/$name-$part.log" 2>&1
    tail -2 "$OUT/$name-$part.log"
}
aa() {  # the A/A sample for at most $1 seconds, resumed
    [ "$1" -gt 30 ] || { echo "no time left for the A/A sample"; return; }
    timeout -s INT "$1" python3 bench/kernelbench_aa.py "$kb" --out "results/aa-$name" --every 5 \
        >> "$OUT/$name-aa.log" 2>&1
    cp "results/aa-$name/run/results.jsonl" "$OUT/$name-aa-results.jsonl" 2>/dev/null
    cp "results/aa-$name/kernelbench-aa.md" "$OUT/$name-aa.md" 2>/dev/null
    tail -3 "$OUT/$name-aa.log"
}
readme_command() {  # the README's `python run.py --problem sigmoid` as typed, for at most $1 seconds; its records
    { timeout "$1" python run.py --problem sigmoid; echo "exit status $?"; } > "$OUT/$name-readme.log" 2>&1
    tail -2 "$OUT/$name-readme.log"
    cp "$(ls -dt results/*-sigmoid/ | head -1)/results.jsonl" "$OUT/$name-readme-results.jsonl" 2>/dev/null
}
serve_wheels() {  # fastapi and uvicorn from the carried wheels (the device's python has neither), once a machine
    [ -d /tmp/site/fastapi ] || python3 -m pip install -q --no-index --find-links .whl/serve --no-compile \
        --no-cache-dir --target /tmp/site fastapi uvicorn && export PYTHONPATH=/tmp/site
}
aa_pairs() {  # $1: devices, $2: its name in the logs; PAIRS (40) A/A pairs, rl, judged whole; $3...: a command before
    local devices=$1 called=$2; shift 2
    timeout -s INT $(( $(left) - 20 )) "$@" python3 bench/service_throughput.py "$kb" --preset rl \
        --pairs ${PAIRS:-40} --single .corpus/kb-v0/KernelBench/level1/19_ReLU.py ${devices:+--devices $devices} \
        --out "$OUT/$name-contention.jsonl" --records "$OUT/$name-contention-$called-records.jsonl" \
        > "$OUT/$name-contention-$called.log" 2>&1
}
case $part in
one)
    readme_command 150
    gpu_tests $(( $(left) - 10 )) tests/adversarial/test_adversarial_gpu.py tests/adversarial/test_isolation_gpu.py \
        tests/test_footprint.py tests/test_gpu_probe.py tests/test_worker.py ;;
two)
    gpu_tests 400 tests/test_gpu.py tests/test_gpu_solutions.py
    aa $(( $(left) - 10 )) ;;
aa) aa $(( $(left) - 10 )) ;;
service)
    serve_wheels || exit 1
    [ "${MIX:-1}" = 0 ] || [ -f .corpus/realgen/pairs.csv ] || {
        echo "no .corpus/realgen: run bench/realgen_corpus.py first"; exit 2; }
    for preset in rl default; do  # each: the service's start, its warm-up and single pair, then a batch judged whole
        pairs=${PAIRS_RL:-64}; [ $preset = rl ] || pairs=${PAIRS_DEFAULT:-40}
        budget=$(( ($(left) - 60) * pairs / (pairs + ${PAIRS_DEFAULT:-40}) ))  # a cap: the batch should end first
        [ $preset = rl ] || budget=$(( $(left) - 40 ))
        mix=(--generations .corpus/realgen); [ "${MIX:-1}" = 0 ] && mix=()  # MIX=0: A/A pairs only (device-bound)
        timeout -s INT $(( budget + 60 )) python3 bench/service_throughput.py "$kb" "${mix[@]}" \
            --preset $preset --pairs "$pairs" --budget-s $budget --single .corpus/kb-v0/KernelBench/level1/19_ReLU.py \
            ${DEVICES:+--devices "$DEVICES"} \
            --out "$OUT/$name-service.jsonl" --records "$OUT/$name-service-records.jsonl" \
            > "$OUT/$name-service-$preset.log" 2>&1
        tail -2 "$OUT/$name-service-$preset.log"
    done ;;
scale)
    serve_wheels || exit 1
    for devices in ${SCALE_GPUS:-0 0,1}; do
        cap=$(( ($(left) - 60) * 6 / 10 )); [ $devices = 0 ] && [ -n "${SCALE_GPUS:-}" ] && cap=$(( $(left) - 70 ))
        [ $devices = 0 ] || cap=$(( $(left) - 70 ))
        # --budget-s: past it the pairs done are counted (the start-up and warm pair take ~30 s of the cap)
        timeout -s INT $cap python3 bench/service_throughput.py "$kb" --preset rl --pairs ${PAIRS:-60} \
            --budget-s $(( cap - 45 )) \
            --single .corpus/kb-v0/KernelBench/level1/19_ReLU.py --devices $devices \
            --out "$OUT/$name-scale.jsonl" --records "$OUT/$name-scale-records.jsonl" \
            > "$OUT/$name-scale-${devices//,/-}.log" 2>&1
        tail -2 "$OUT/$name-scale-${devices//,/-}.log"
    done
    [ -z "${SCALE_GPUS:-}" ] && [ "$(left)" -gt 60 ] && readme_command $(( $(left) - 10 )) ;;
contention|profile)  # the logs in one archive, NAME-PART.tgz: a lent machine gives back 8 files
    serve_wheels || exit 1
    work=$OUT/work; mkdir -p "$work"
    vmstat -t 1 > "$work/vmstat.log" 2>&1 & vmstat=$!
    while :; do echo "$(date +%T) $(awk '/MHz/ {s += $4; n++} END {printf "%.0f", s / n}' /proc/cpuinfo)"; sleep 2
    done > "$work/cpu-mhz.log" & mhz=$!
    mark() { echo "$(date +%T) $1" | tee -a "$work/marks.log"; }
    if [ $part = contention ]; then
        mark driver; timeout 200 python3 bench/driver_contention.py --out "$work/driver.jsonl" > "$work/driver.log" 2>&1
        tail -1 "$work/driver.log"
    else
        mark alone; CUDA_VISIBLE_DEVICES=0 aa_pairs "" alone; tail -1 "$OUT/$name-contention-alone.log"
    fi
    mark together; CUDA_VISIBLE_DEVICES=0 aa_pairs "" gpu0 & first=$!
    CUDA_VISIBLE_DEVICES=1 aa_pairs "" gpu1; wait $first; tail -qn1 "$OUT"/$name-contention-gpu?.log
    if [ $part = contention ]; then
        mark both; aa_pairs 0,1 both; tail -1 "$OUT/$name-contention-both.log"
    else
        python3 -m pip install -q --no-index --find-links .whl/prof --target /tmp/prof py-spy &&
            mark profiled && PAIRS=20 CUDA_VISIBLE_DEVICES=0 aa_pairs "" profiled /tmp/prof/bin/py-spy record \
                --subprocesses --nonblocking --rate 40 --format raw -o "$work/py-spy.txt" -- &&
            tail -1 "$OUT/$name-contention-profiled.log"
    fi
    mark end; kill $vmstat $mhz
    mv "$OUT"/$name-contention* "$work"/; tar czf "$OUT/$name-$part.tgz" -C "$work" .; rm -rf "$work" ;;
presets) gpu_tests $(( $(left) - 10 )) tests/adversarial/test_presets_gpu.py ;;
readme) readme_command $(( $(left) - 10 )) ;;
*) echo "PART is one, two, aa, service, scale, contention, profile, presets or readme"; exit 2 ;;
esac
