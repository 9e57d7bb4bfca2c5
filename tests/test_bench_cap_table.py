"""bench/cap_table.py: issue 37's table of A/A pairs judged or skipped per GPU memory cap, from made-up records."""
import importlib.util
import json

from support import ROOT


def cap_table():
    spec = importlib.util.spec_from_file_location("cap_table", ROOT / "bench" / "cap_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(problem, status, tie=None, speedup=None, wall_s=5.0, error=None):
    return {"problem": problem, "problem_path": f"level1/{problem}.py", "solution": f"aa_{problem}", "status": status,
            "tie": tie, "speedup": speedup, "speedup_ci_low": speedup and speedup - 0.01,
            "speedup_ci_high": speedup and speedup + 0.01, "wall_s": wall_s, "error": error, "harness": "abc"}


def test_each_cap_counts_ties_skips_and_names_the_pairs_that_miss_the_bar(tmp_path):
    table = cap_table()
    rows = [record("1_mm", "correct", True, 1.0), record("2_conv", "correct", False, 0.7),
            record("3_big", "skipped", wall_s=0.4), record("4_loss", "runtime_error", error="out of memory"),
            record("1_mm", "harness_error")]  # an earlier record of 1_mm (below: a resumed sweep judged it again)
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows[:4]) + "\n")
    text = table.table({"24": table.read(path)})
    assert "| 24 | 4 | 1 | 1 | 1 | 0.4 | 0.4 | 1 runtime_error | abc |" in text
    assert "Not a tie and not skipped at 24 GiB: 2" in text
    assert "- 2_conv: correct 0.700 [0.690, 0.710]" in text and "- 4_loss: runtime_error out of memory" in text
    path.write_text("\n".join(json.dumps(r) for r in [rows[4], *rows[:4]]) + "\n")  # a resumed sweep's later record wins
    assert len(table.read(path)) == 4 and table.summary(table.read(path))["others"] == "1 runtime_error"
