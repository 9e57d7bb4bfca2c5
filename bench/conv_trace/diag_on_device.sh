#!/bin/bash
# Every convolution call of every process of a run, traced (sitecustomize.py here): level1 50_ and 74_ A/A at 24 GiB,
# then 50_ uncapped, on a lent GPU (carry .corpus and .whl; session 48, issue 37). The traces come back in
# $OUT/trace.tgz (conv-PID.log, cap24-conv-PID.log), the sweeps' records in $OUT/diag-*-results.jsonl.
export PYTHONUNBUFFERED=1 CONV_TRACE_DIR=$OUT/trace PYTHONPATH=$PWD/bench/conv_trace
rm -rf .kbrun-diag-cap24 .kbrun-diag-80  # a resumed sweep on a warm machine would judge (and trace) nothing
mkdir -p "$CONV_TRACE_DIR"
nvidia-smi -L
CAP_GIB=24 KB=.corpus/kb-head/KernelBench timeout 200 bash bench/resume_on_device.sh diag-cap24 180 --problems level1/50_ level1/74_
for f in "$CONV_TRACE_DIR"/*.log; do mv "$f" "$CONV_TRACE_DIR/cap24-$(basename "$f")"; done
KB=.corpus/kb-head/KernelBench timeout 150 bash bench/resume_on_device.sh diag-80 130 --problems level1/50_
python3 - <<'P'
import json, os
for name in ("diag-cap24", "diag-80"):
    path = f".kbrun-{name}/run/results.jsonl"
    for line in open(path) if os.path.exists(path) else []:
        r = json.loads(line)
        print(name, r["problem"], r["status"], r.get("speedup"), r.get("peak_mem_mb"), (r.get("error") or "")[:300])
P
(cd "$OUT" && tar czf trace.tgz trace && rm -rf trace)  # one file: a run returns only a few
