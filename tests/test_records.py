"""The result schema: statuses typed, JSON round trips, and versions checked when results are read."""
import dataclasses
import json

import pytest

from harness.common import records, store
from harness.common.errors import UserError
from harness.common.records import Result
from harness.common.verdict import Status


def test_status_is_typed_and_reads_as_its_name():
    result = Result(problem="p", solution="s", status="timeout")
    assert result.status is Status.TIMEOUT
    assert f"{result.status}" == "timeout" and str(result.status) == "timeout" and result.status == "timeout"
    assert records.failure("p", "s", Status.CRASH, "x").status is Status.CRASH


def test_an_unknown_status_is_refused():
    with pytest.raises(ValueError):
        Result(problem="p", solution="s", status="probably_fine")


def test_a_result_survives_json_and_back():
    result = Result(problem="p", solution="s", status=Status.CORRECT, flags=["tie_b", "tie_a", "tie_a"], speedup=1.5)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["status"] == "correct" and data["flags"] == ["tie_a", "tie_b"]
    again = Result.from_dict({**data, "a_field_of_a_later_version": 1})
    assert again.status is Status.CORRECT and again.speedup == 1.5 and again.schema_version == records.SCHEMA_VERSION


def write(path, *rows):
    for row in rows:
        store.append_jsonl(path, row)
    return path


def test_results_of_this_version_are_read(tmp_path):
    ours = Result(problem="p", solution="s", status=Status.INCORRECT).to_dict()
    results, torn = records.read_results(write(tmp_path / "results.jsonl", ours, ours))
    assert [r.status for r in results] == [Status.INCORRECT] * 2 and torn == 0


@pytest.mark.parametrize("version", [2, None, "1"])
def test_results_of_another_version_are_a_user_error_naming_the_file(tmp_path, version):
    ours = Result(problem="p", solution="s", status=Status.CORRECT).to_dict()
    path = write(tmp_path / "results.jsonl", ours, {**ours, "schema_version": version})
    with pytest.raises(records.SchemaError, match=r"results.jsonl, record 2: schema_version") as caught:
        records.read_results(path)
    assert isinstance(caught.value, UserError)  # one line and exit 2 from the CLI


def test_a_record_that_is_no_result_is_a_schema_error(tmp_path):
    path = write(tmp_path / "results.jsonl", {"schema_version": 1, "problem": "p"})
    with pytest.raises(records.SchemaError, match="record 1: not a result"):
        records.read_results(path)


def test_the_docs_table_of_fields_is_made_from_the_result_declaration():
    """docs/results.md holds records.fields_table() as it is now: a field added to Result without its doc fails here."""
    from pathlib import Path

    from harness.common import records

    docs = (Path(__file__).resolve().parents[1] / "docs" / "results.md").read_text()
    assert records.fields_table() in docs, "regenerate the table: python -c 'from harness.common import records; print(records.fields_table())'"
    assert all(f.metadata["doc"] for f in dataclasses.fields(records.Result))


def test_speedups_csv_shows_the_readmes_contract_fields_in_order():
    from harness.common import records
    from harness.runner import report

    contract = ["problem", "solution", "status", "flags", "speedup", "speedup_ci_low", "speedup_ci_high", "tie",
                "ref_ms", "new_ms", "max_abs_err", "max_rel_err", "gbps", "tflops", "sol_pct", "ref_sol_pct",
                "compile_s", "wall_s", "device", "gpu", "error"]
    assert report.CSV_COLUMNS == records.shown_in("csv") == contract

