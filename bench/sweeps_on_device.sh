#!/bin/bash
# Issue 37's three KernelBench A/A sweeps of levels 1-3 on one lent GPU, one after another within one call: the full
# card, then capped to 40 GiB, then to 24 GiB, each resumed from its records in bench/results/ (copy each call's
# records there before the next call: a fresh machine starts from them alone):
#   KB=.corpus/kb-head/KernelBench bash bench/sweeps_on_device.sh CARD COMMIT SECONDS [SWEEPS]     (carry .corpus)
# The records are kernelbench-aa-CARD-levels123-COMMIT, -cap40-COMMIT and -cap24-COMMIT (e.g. h100, c247478); SWEEPS
# picks some of `80 40 24` (default all three, in that order). A sweep with every problem of KB's levels 1-3 recorded
# is passed over; one that starts with under 45 s left does not start. Everything comes back in
# $OUT/sweeps.tgz, with each sweep's log and records (bench/resume_on_device.sh's files).
# The sweeps measure COMMIT's harness/, configs/ and run.py: where the tree's differ, this copy's are checked out at
# COMMIT for the sweeps and put back at the end, and the records say sha:<hash of harness/*.py> (harness/runner/environment.py).
# Where this copy's git lacks COMMIT, they come from .at-COMMIT, carried (made here by
# `mkdir -p .at-COMMIT && git archive COMMIT harness configs run.py | tar -x -C .at-COMMIT`; .git/info/exclude it).
card=${1:?CARD}; commit=${2:?COMMIT}; seconds=${3:?SECONDS}; shift 3
sweeps=${*:-80 40 24}
end=$((SECONDS + seconds))
kb=${KB:-.kernelbench/KernelBench}
problems=$(ls "$kb"/level[123]/*.py | wc -l)  # what bench/kernelbench_aa.py --levels 1,2,3 takes
[ "$problems" -gt 0 ] || { echo "no KernelBench problems under $kb (set KB)"; exit 2; }
export PYTHONUNBUFFERED=1
measured="harness configs run.py"
if ! git diff --quiet "$commit" -- $measured 2>/dev/null; then
    trap "git -C '$PWD' checkout HEAD -- $measured" EXIT
    if git cat-file -e "$commit^{commit}" 2>/dev/null; then
        git checkout "$commit" -- $measured
    elif [ -d ".at-$commit/harness" ]; then
        rm -rf $measured && cp -r ".at-$commit/." .
    else
        echo "no commit $commit here, nor .at-$commit"; exit 2
    fi || exit 2
    echo "$measured as at $commit"
fi
nvidia-smi -L
for cap in $sweeps; do
    case $cap in 80) name=kernelbench-aa-$card-levels123-$commit; gib= ;;
                 40|24) name=kernelbench-aa-$card-cap$cap-$commit; gib=$cap ;;
                 *) echo "SWEEPS are 80, 40 or 24"; exit 2 ;; esac
    done_pairs=$(cat "bench/results/$name-results.jsonl" ".kbrun-$name/run/results.jsonl" 2>/dev/null \
                 | python3 -c 'import json, sys; print(len({json.loads(l)["key"] for l in sys.stdin if l.strip()}))')
    left=$((end - SECONDS))
    echo "$name: $done_pairs of $problems pairs recorded, $left s left"
    [ "$done_pairs" -ge "$problems" ] && continue
    [ "$left" -lt 45 ] && break
    CAP_GIB=$gib bash bench/resume_on_device.sh "$name" "$left" --levels 1,2,3
done
cd "$OUT" || exit 1
tar czf /tmp/sweeps.tgz . && find . -mindepth 1 -delete && mv /tmp/sweeps.tgz . && ls -la
