#!/bin/bash
# `pytest -m gpu` in full on one lent GPU, in two calls of under 10 minutes each (the whole takes ~15 minutes):
#   bash bench/pytest_gpu_on_device.sh NAME a    # the adversarial and isolation sets, footprint, probe, worker
#   bash bench/pytest_gpu_on_device.sh NAME b    # the README's command as typed, then test_gpu and the seeds' solutions
#   bash bench/pytest_gpu_on_device.sh NAME two  # the tests that need two GPUs (skipped by a and b on one), ~1 minute
#   bash bench/pytest_gpu_on_device.sh NAME gemm # part b's GEMM solution tests alone (what a cut-short part b left)
# Each part's log, junit XML and durations come back in $OUT (NAME-a.log, NAME-a.xml ...).
name=${1:?NAME}; part=${2:?PART a, b, gemm or two}
export PYTHONUNBUFFERED=1
nvidia-smi -L
# harness/'s hash as the records' `harness` reads it where .git lags or is absent (sha:...; a shell glob's order would
# follow the locale).
echo "harness sha:$(python3 -c 'from harness.runner.environment import harness_sha; print(harness_sha())')"
case $part in
    a) files="tests/adversarial/test_adversarial_gpu.py tests/adversarial/test_isolation_gpu.py
              tests/test_footprint.py tests/test_gpu_probe.py tests/test_worker.py" ;;
    b) { timeout 120 python run.py --problem sigmoid; echo "exit status $?"; } > "$OUT/$name-readme.log" 2>&1
       run=$(ls -dt results/*/ | head -1)
       [ -f "$run/results.jsonl" ] && cp "$run/results.jsonl" "$OUT/$name-readme-results.jsonl"
       files="tests/test_gpu.py tests/test_gpu_solutions.py" ;;
    gemm) files="tests/test_gpu_solutions.py -k gemm" ;;
    two) [ "$(python3 -c "import torch; print(torch.cuda.device_count())")" -ge 2 ] || { echo "part two needs two visible GPUs"; exit 2; }
         files="tests/test_gpu.py -k second_gpu" ;;
    *) echo "PART is a, b, gemm or two"; exit 2 ;;
esac
# SIGINT at the limit: pytest then still reports the failures so far and writes its XML (killed, it left neither, and
# a failure at 56d997a went unexplained).
{ timeout -s INT -k 20 "${PYTEST_S:-540}" python3 -m pytest -v -m gpu -p no:cacheprovider --durations=0 \
      --junitxml="$OUT/$name-$part.xml" $files; echo "exit status $?"; } > "$OUT/$name-$part.log" 2>&1
tail -3 "$OUT/$name-$part.log"
