"""bench/realgen.py's harness step: which records a resumed call keeps."""
import json
import sys

from support import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import realgen  # noqa: E402


def records(path):
    return [json.loads(line)["solution"] for line in path.read_text().splitlines()]


def test_a_resumed_call_forgets_harness_errors_and_the_pairs_named_again(tmp_path, monkeypatch):
    results = tmp_path / "results.jsonl"
    rows = [{"solution": "a", "status": "correct", "harness": "old"}, {"solution": "b", "status": "harness_error"},
            {"solution": "c", "status": "incorrect"}, {"solution": "d", "status": "correct", "harness": "now"}]
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    realgen.forget_records(results, {"c"})
    assert records(results) == ["a", "d"]
    monkeypatch.setattr(realgen, "harness_version", lambda: "now")
    realgen.forget_records(results, {"all"})  # every pair another harness judged: a repeated call keeps this one's
    assert records(results) == ["d"]
