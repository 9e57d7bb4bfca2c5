import json

from harness.common import store


def test_append_and_read_back(tmp_path):
    path = tmp_path / "results.jsonl"
    store.append_jsonl(path, {"a": 1})
    store.append_jsonl(path, {"a": 2})
    assert store.read_jsonl(path) == ([{"a": 1}, {"a": 2}], 0)


def test_torn_last_line_is_skipped_and_counted(tmp_path):
    path = tmp_path / "results.jsonl"
    store.append_jsonl(path, {"a": 1})
    with open(path, "a") as handle:
        handle.write('{"a": 2, "b"')
    assert store.read_jsonl(path) == ([{"a": 1}], 1)


def test_write_atomic_replaces_whole_and_leaves_no_temporaries(tmp_path):
    path = tmp_path / "sub" / "t.json"
    store.write_atomic(path, json.dumps({"v": 1}))
    store.write_atomic(path, json.dumps({"v": 2}))
    assert json.loads(path.read_text()) == {"v": 2}
    assert [p.name for p in path.parent.iterdir()] == ["t.json"]


def test_missing_file_reads_as_empty(tmp_path):
    assert store.read_jsonl(tmp_path / "none.jsonl") == ([], 0)


def test_a_record_after_a_torn_line_starts_its_own_line(tmp_path):
    path = tmp_path / "results.jsonl"
    store.append_jsonl(path, {"a": 1})
    with open(path, "a") as handle:
        handle.write('{"a": 2, "b"')  # a crash in the middle of a write
    store.append_jsonl(path, {"a": 3})
    assert store.read_jsonl(path) == ([{"a": 1}, {"a": 3}], 1)
