#!/bin/bash
# One lent-GPU call's worth of the real-generations corpus (bench/realgen.py), resuming from results/realgen/:
#   [AGAIN=ID,...|all] [DEVICES=all] bench/realgen_on_device.sh HARNESS_S KERNELBENCH_S
# (AGAIN: pairs the harness judges again; all: every pair whose record another harness made, so that calls repeated
# with it go on; DEVICES: run.py's --devices for the harness's pairs). The harness step ends by killing the judges and
# workers it left (a judge the time limit cut off leaves its workers), known by a mark in their environment: a harness
# run beside it (a lane of bench/lanes_on_device.sh) is spared. One realgen call a machine (its state: /tmp/realgen-state).
# Carry .corpus, .whl and results/realgen. The harness judges new pairs for HARNESS_S seconds (run.py --manifest, as a
# user runs it), then KernelBench's evaluator takes the pairs the harness judged, for KERNELBENCH_S seconds, with the
# harness's builds of this call first. Everything comes back in $OUT/realgen.tgz, the logs in $OUT/*.log.
harness_s=${1:?HARNESS_S}; kernelbench_s=${2:?KERNELBENCH_S}
# Every process this call starts carries the mark (a worker forked from its judge too: /proc/PID/environ is the
# environment its process image started with, whatever the worker then sets).
export REALGEN_CALL=$$-$RANDOM
kill_marked() {
    for pid in $(pgrep -f "harness\.(judge|worker|judge_factory)"); do
        tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "$1" && kill "$pid"
    done
}
export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site || exit 1
nvidia-smi -L
# The state the last call on this (warm) machine left, where the carried one is not it (that call's realgen.tgz not
# yet unpacked into results/realgen here): kept, not lost. Each call's state carries a stamp of its own; a state
# unpacked from the last call and then edited here keeps that call's stamp, and is taken as carried.
last=/tmp/realgen-state
if [ -f $last/STAMP ] && ! cmp -s $last/STAMP results/realgen/STAMP; then
    echo "the carried results/realgen is not this machine's last call's: going on from that call's state"
    rm -rf results/realgen && cp -r $last results/realgen
fi
# 0 seconds skips a step (`timeout 0` would not limit it at all): on a machine kept warm, one call can judge with the
# harness for its whole window and the next give KernelBench the pairs it built, with its builds still there.
if [ "$harness_s" -gt 0 ]; then
    timeout -s INT "$harness_s" python3 bench/realgen.py harness --out results/realgen ${AGAIN:+--again "$AGAIN"} \
        ${DEVICES:+--devices "$DEVICES"} \
        > "$OUT/harness.log" 2>&1
    sleep 5; kill_marked "REALGEN_CALL=$REALGEN_CALL"
fi
# A pair's own limit under the window: one that builds for longer gets its record ("no result within") and the next
# call goes on past it (each call starts on a bare machine: a limit over the window stalled every call on one pair).
if [ "$kernelbench_s" -gt 0 ]; then
    REALGEN_KB_TIMEOUT_S=$(( kernelbench_s - 30 < 300 ? kernelbench_s - 30 : 300 )) \
    timeout "$kernelbench_s" python3 bench/realgen.py kernelbench --out results/realgen > "$OUT/kernelbench.log" 2>&1
fi
python3 bench/realgen.py table --out results/realgen
date +%s%N > results/realgen/STAMP
tar czf "$OUT/realgen.tgz" results/realgen
rm -rf $last && cp -r results/realgen $last
