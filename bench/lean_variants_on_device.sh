#!/bin/bash
# Which asymmetry between a pair's two workers makes an A/A pair lean (level3 27_RegNet: the candidate 1.2% slower in
# 11 of 12 copies on an H100, only with cuDNN's TF32 convolutions; not the shared CPU, not the cache flush:
# results/gpu-acceptance/s45/). Each variant edits this machine's copy of harness/ (never committed), judges COPIES A/A
# copies of PROBLEM with bench/aa_coverage.py, and puts harness/ back:
#   bash bench/lean_variants_on_device.sh PROBLEM COPIES [VARIANT ...]
# control: as committed; nopoison: neither worker's freed memory poisoned before its correctness calls; poisonlater,
# poisonfirst: poisoned before all but the first, before the first only; poisonreleased: the poisoned blocks handed back
# (empty_cache) after poisoning; poisonsmall: blocks of at least 1 MiB poisoned (none from the small-block pool);
# unconfined: the candidate's worker without the seccomp filter and capability drop; refcalls: the reference's worker
# calls in every correctness trial, not the first only; nochecks: no timed-output checks (the candidate's output read
# by the judge on some rounds); emptied: both workers' caches emptied before timing (the candidate's holds what its
# correctness calls cached, the reference's was emptied after its one call). Results in $OUT/lean-VARIANT.md and $OUT/lean.log.
: "${OUT:?set OUT to the folder whose files come back}"
problem=${1:?PROBLEM}; copies=${2:?COPIES}; shift 2
export PYTHONUNBUFFERED=1
committed=$(mktemp -d) && cp -r harness "$committed/" || exit 2
trap 'rm -rf harness && cp -r "$committed/harness" . && rm -rf "$committed"' EXIT  # harness/ back however this ends
for v in ${*:-control emptied nopoison unconfined refcalls nochecks}; do
    python3 - "$v" <<'EOF' || exit 2
import sys
from pathlib import Path
edits = {"control": [],
         "nopoison": [("harness/judge/judge.py", "poison_sizes=sizes,", "poison_sizes=[],"),
                      ("harness/judge/judge.py", "poison_sizes=poison_sizes(ref_out), seed=seed))", "poison_sizes=[], seed=seed))")],
         "poisonlater": [("harness/worker/worker.py", "self.own_ooms += poison_free_memory(self.device, poison_sizes)",
                          "self.own_ooms += poison_free_memory(self.device, poison_sizes if hasattr(self, 'ran') else [])"
                          "; self.ran = True")],
         "poisonfirst": [("harness/worker/worker.py", "self.own_ooms += poison_free_memory(self.device, poison_sizes)",
                          "self.own_ooms += poison_free_memory(self.device, [] if hasattr(self, 'ran') else poison_sizes)"
                          "; self.ran = True")],
         "poisonreleased": [("harness/worker/worker.py", "        del blocks\n", "        del blocks\n        torch.cuda.empty_cache()\n")],
         "poisonsmall": [("harness/worker/worker.py", "        blocks = []\n", "        blocks = []\n        nbytes = max(nbytes, 1 << 20)\n")],
         "unconfined": [("harness/judge/judge.py", "confined=side == 0)", "confined=False)")],
         "refcalls": [("harness/judge/judge.py", "self.reference_worker_called = True", "pass")],
         "nochecks": [("harness/judge/timing.py", 'with self.phase("timing.checks"):', "if False:")],
         "emptied": [("harness/judge/timing_setup.py", 'with self.phase("timing_setup.prepare"):',
                      'self.sandbox.request("release_memory", self.cfg.timeout, workspaces=True)\n        '
                      'self.ref_sandbox.request("release_memory", self.cfg.timeout, workspaces=True)\n        '
                      'with self.phase("timing_setup.prepare"):')]}
for path, old, new in edits[sys.argv[1]]:
    text = Path(path).read_text()
    assert text.count(old) == 1, f"{sys.argv[1]}: '{old}' not once in {path}"
    Path(path).write_text(text.replace(old, new))
EOF
    timeout 150 python3 bench/aa_coverage.py --problem "$problem" --runs 1 --copies "$copies" --out ".lean-$v" \
        >> "$OUT/lean.log" 2>&1
    cp ".lean-$v/aa-coverage.md" "$OUT/lean-$v.md"
    rm -rf harness && cp -r "$committed/harness" .
    echo "$v: $(grep 'Point estimates' "$OUT/lean-$v.md")"
done
