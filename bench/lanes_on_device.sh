#!/bin/bash
# Several jobs side by side on a lent machine of several GPUs, each on GPUs of its own, their files in one archive:
#   bash bench/lanes_on_device.sh NAME 'GPUS: COMMAND' ['GPUS: COMMAND' ...]
# e.g. (session 43's first call, as one command):
#   KB=.corpus/kb-head/KernelBench bash bench/lanes_on_device.sh call1 \
#     '0,1: bash bench/resume_on_device.sh aa80 545 --levels 1,2,3 -- --devices all' \
#     '2: CAP_GIB=40 bash bench/resume_on_device.sh aa40 545 --levels 1,2,3' \
#     '3: CAP_GIB=24 bash bench/resume_on_device.sh aa24 545 --levels 1,2,3'
# A lane runs its commands in order (join them with ;) under CUDA_VISIBLE_DEVICES=GPUS, its output and exit status in
# $OUT/lane-N.out. At the end everything under $OUT is packed into $OUT/NAME.tgz (a call brings back 8 files at most);
# the exit status is the first failing lane's.
: "${OUT:?set OUT to the folder whose files come back}"
name=${1:?NAME}; shift
export PYTHONUNBUFFERED=1
nvidia-smi -L 2>/dev/null
for lane in "$@"; do  # every lane checked before any starts
    [[ ${lane%%:*} =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "lane '$lane': start it with the GPUs, as '0,1: COMMAND'"; exit 2; }
done
pids=()
for lane in "$@"; do
    gpus=${lane%%:*}; command=${lane#*:}; i=${#pids[@]}
    (export CUDA_VISIBLE_DEVICES=$gpus; echo "lane $i, GPU(s) $gpus:$command"; eval "$command"
     echo "lane $i exit status $?") > "$OUT/lane-$i.out" 2>&1 &
    pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid"; done
tail -n 4 "$OUT"/lane-*.out
grep -h "exit status [1-9]" "$OUT"/lane-*.out && status=1
cd "$OUT" || exit 1
tar czf "/tmp/$name.tgz" . && find . -mindepth 1 -delete && mv "/tmp/$name.tgz" . && ls -la
exit $status
