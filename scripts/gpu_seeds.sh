#!/usr/bin/env bash
# Judge every candidate of the given problems at full seed size on the GPU; keep the tables.
# Usage: scripts/gpu_seeds.sh RUN_DIR PROBLEM [PROBLEM ...]   (RUN_DIR is reused: --resume)
set -u
run_dir=$1; shift
args=()
for p in "$@"; do args+=(--problem "$p"); done
python3 run.py "${args[@]}" --device cuda --out "$run_dir" --resume
