#!/bin/bash
# Issue 39's behaviour check, and issue 37's full-size sigmoid memory, in one call of a lent 2-GPU machine, at this
# checkout:   KB=.corpus/kb-head/KernelBench bash bench/behaviour_on_device.sh NAME      (carry .corpus)
# GPU 0: the README's command as typed (python run.py --problem sigmoid), then bench/memory_on_device.sh's `full`.
# GPU 1: pytest -m gpu (all of it), then a KernelBench A/A sample (every 10th problem of levels 1-3).
# Each part has its own timeout; what each left comes back in $OUT (NAME-*.log, NAME-*-results.jsonl, NAME-mem.tgz).
name=${1:?NAME}
export PYTHONUNBUFFERED=1
kb=${KB:-.kernelbench/KernelBench}
nvidia-smi -L
(
    export CUDA_VISIBLE_DEVICES=0
    { timeout 240 python run.py --problem sigmoid; echo "exit status $?"; } > "$OUT/$name-readme.log" 2>&1
    run=$(ls -dt results/*/ | head -1)
    [ -f "$run/results.jsonl" ] && cp "$run/results.jsonl" "$OUT/$name-readme-results.jsonl"
    bash bench/memory_on_device.sh "$name-mem" full
) &
(
    export CUDA_VISIBLE_DEVICES=1
    { timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider; echo "exit status $?"; } > "$OUT/$name-pytest-gpu.log" 2>&1
    timeout 230 python3 bench/kernelbench_aa.py "$kb" --out ".kbrun-$name-aa" --every 10 > "$OUT/$name-aa.log" 2>&1
    cp ".kbrun-$name-aa/run/results.jsonl" "$OUT/$name-aa-results.jsonl"
) &
wait
echo "done: $(ls "$OUT" | tr '\n' ' ')"
