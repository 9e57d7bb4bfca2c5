#!/bin/bash
# Why two GPUs judged 1.65x one GPU's pairs an hour (session 64): every phase of a pair was ~20% slower with the other
# GPU busy. One service on GPU 0 judges the same PAIRS (30) rl A/A pairs three times: alone; beside 3 loops that start
# CUDA on GPU 1 and end it (as the other GPU's judge and two workers do each pair); beside 16 busy CPU loops.
#   bash bench/scale_probe.sh NAME   (carry .corpus and .whl; results in $OUT/NAME-probe.jsonl)
name=${1:?NAME}; kb=${KB:-.corpus/kb-head/KernelBench}
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --find-links .whl/serve --no-compile --no-cache-dir --target /tmp/site \
    fastapi uvicorn && export PYTHONPATH=/tmp/site || exit 1
churn() {  # a process that starts CUDA on GPU 1, allocates 1 GiB, copies, frees and exits, again and again
    while :; do python3 -c "import torch; x = torch.empty(2**28, device='cuda:1'); x.fill_(1); torch.cuda.synchronize()"
    done
}
spin() { while :; do :; done; }
for load in none churn cpu; do
    pids=()
    case $load in
    churn) for _ in 1 2 3; do churn & pids+=($!); done ;;
    cpu) for _ in $(seq 16); do spin & pids+=($!); done ;;
    esac
    timeout 200 python3 bench/service_throughput.py "$kb" --preset rl --pairs ${PAIRS:-30} --devices 0 \
        --single .corpus/kb-v0/KernelBench/level1/19_ReLU.py --out "$OUT/$name-probe-$load.jsonl" \
        --records "$OUT/$name-probe-records-$load.jsonl" > "$OUT/$name-probe-$load.log" 2>&1
    for pid in "${pids[@]}"; do kill "$pid"; pkill -P "$pid"; done 2>/dev/null
    wait 2>/dev/null
    echo "$load: $(tail -1 "$OUT/$name-probe-$load.log" | cut -c1-400)"
done
