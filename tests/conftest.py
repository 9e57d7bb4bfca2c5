"""pytest hooks: GPU tests carry @pytest.mark.gpu and are skipped where no CUDA GPU is visible."""
import json
import subprocess
import sys

import pytest

from support import FAST_CONFIG, FIXTURES, ROOT, cuda_available


def pytest_collection_modifyitems(config, items):
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


JUDGED = {("fx_argmax", "aa_reference"), ("fx_argmax", "argmin"), ("fx_jitter", "aa_reference"),
          ("fx_jitter", "jitters_more"), ("fx_relu", "jitters_at_rounding")}


@pytest.fixture(scope="session")
def judged_pairs(tmp_path_factory):
    """The pairs of JUDGED, judged in one run on the CPU (test_judge, test_trials): {(problem, solution): record}."""
    out = tmp_path_factory.mktemp("judged")
    manifest = out / "pairs.csv"
    manifest.write_text("problem,candidate\n" + "".join(
        f"{FIXTURES / 'problems' / problem}.py,{FIXTURES / 'solutions' / problem / solution}.py\n"
        for problem, solution in sorted(JUDGED)))
    proc = subprocess.run([sys.executable, "run.py", "--manifest", str(manifest), "--device", "cpu", "--config",
                           str(FAST_CONFIG), "--out", str(out / "run")], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = map(json.loads, (out / "run" / "results.jsonl").read_text().splitlines())
    return {(r["problem"], r["solution"]): r for r in records}
