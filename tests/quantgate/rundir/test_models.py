"""The run-file models and their readers: round trips, format versions, unknown keys, torn lines,
and the errors that name the file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from quantgate.rundir._files import RECORDS_FILE, SUMMARY_FILE, VARIANTS_FILE
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._store import (
    JsonLines,
    RunFileError,
    RunStore,
    load_run,
    parse_model,
    read_lines,
    read_records,
    read_summary,
)
from quantgate.rundir._summary import DatasetInfo, RunSummary, VariantEntry
from tests.quantgate.run_factory import make_run


def _record(case_id: str = "c7", **changes: object) -> CaseRecord:
    """A record with a non-default value in every kind of field (nested, null, unicode, newlines)."""
    values: dict[str, object] = {
        "variant": "Q4_K_M",
        "case_id": case_id,
        "tags": ["lang:es", "numbers"],
        "raw": 'Aquí está:\n{"a": "ñandú \\"x\\"", "b": 1234.5}',
        "record": {"a": 'ñandú "x"', "b": 1234.5, "items": [{"n": 1}, None], "c": None},
        "valid": True,
        "format_valid": False,
        "attempts": 2,
        "validation_errors": ["'b' is not of type 'number'"],
        "error": None,
        "error_kind": None,
        "truncated": True,
        "input_tokens_dropped": 3,
        "field_accuracy": 0.1 + 0.2,  # not exactly 0.3: the float must survive as written
        "fields": {"a": 1.0, "b": 0.1 + 0.2},
        "outcomes": {"a": "exact", "b": "wrong"},
        "agreement": 0.5,
        "agreement_fields": {"a": 1.0, "b": 0.0},
        "ttft_s": 0.123456789,
        "total_s": 2.5,
        "input_tokens": 512,
        "output_tokens": 48,
        "prompt_tokens_per_s": 1e-7,
        "generation_tokens_per_s": 33.3,
        "attempt_timings": [{"total_s": 1.0, "reported": {"eval_count": 20}}, {"total_s": 1.5}],
    }
    values.update(changes)
    return CaseRecord.model_validate(values)


def _summary(**changes: object) -> dict[str, object]:
    """summary.json as a dict, as it would be on disk."""
    summary = RunSummary(
        run_id="20260101-000000-abcdef",
        quantgate_version="test",
        status="complete",
        dataset=DatasetInfo(name="synthetic", path="dataset", sha256="x", cases=1),
        reference="R",
        variants=[VariantEntry(name="R", backend="test", field_accuracy=0.75)],
    ).model_dump(mode="json")
    summary.update(changes)
    return summary


def test_a_records_line_round_trips_through_case_record() -> None:
    record = _record()
    line = record.model_dump_json()
    assert "\n" not in line  # one JSONL line, whatever the model's own text holds
    assert json.loads(line)["format_version"] == 4
    parsed = parse_model(CaseRecord, json.loads(line), where="records.jsonl:1")
    assert parsed == record
    assert parsed.fields["b"] == 0.1 + 0.2
    assert parsed.record == {"a": 'ñandú "x"', "b": 1234.5, "items": [{"n": 1}, None], "c": None}
    assert parsed.raw == record.raw
    assert parsed.attempt_timings[0]["reported"] == {"eval_count": 20}
    assert CaseRecord.model_validate_json(line) == record


def test_records_written_by_the_store_read_back_equal(tmp_path: Path) -> None:
    written = [_record("c0"), _record("c1", error="boom", error_kind="server_error", record=None)]
    with RunStore(tmp_path / "run") as store:
        for record in written:
            store.write_record(record)
    assert list(read_records(tmp_path / "run")) == written
    on_disk = (tmp_path / "run" / RECORDS_FILE).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["case_id"] for line in on_disk] == ["c0", "c1"]


def test_a_file_of_format_version_16_is_refused_naming_the_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / SUMMARY_FILE).write_text(json.dumps(_summary(format_version=16)))
    with pytest.raises(RunFileError) as caught:
        read_summary(run)
    message = str(caught.value)
    assert message.startswith(f"{run / SUMMARY_FILE}: ")
    assert "format_version 16" in message
    read = "(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)"
    assert read in message  # the versions this quantgate reads


def test_a_records_line_of_format_version_5_is_refused_naming_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / RECORDS_FILE
    newer = {**_record("c1").model_dump(mode="json"), "format_version": 5}
    path.write_text(_record("c0").model_dump_json() + "\n" + json.dumps(newer) + "\n")
    lines = read_lines(path, CaseRecord)
    assert next(lines).case_id == "c0"
    with pytest.raises(RunFileError, match=rf"^{re.escape(str(path))}:2: format_version 5 "):
        next(lines)


def test_a_records_line_of_format_version_1_is_read_without_its_retries(tmp_path: Path) -> None:
    path = tmp_path / RECORDS_FILE
    older = _record("c1").model_dump(mode="json", exclude={"retries"}) | {"format_version": 1}
    path.write_text(json.dumps(older) + "\n")
    (read,) = read_lines(path, CaseRecord)
    assert (read.format_version, read.case_id, read.retries) == (4, "c1", None)


def test_parse_model_names_where_the_version_was_found() -> None:
    with pytest.raises(RunFileError, match=r"^somewhere/decision\.json: format_version 16 is not one"):
        parse_model(RunSummary, _summary(format_version=16), where="somewhere/decision.json")


def test_a_file_without_format_version_is_read_as_version_1(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    summary = _summary()
    del summary["format_version"]
    (run / SUMMARY_FILE).write_text(json.dumps(summary))
    read = read_summary(run)
    assert read.format_version == 15  # version 1, which summary.json's version 15 reads as itself
    assert read.run_id == "20260101-000000-abcdef"
    assert read.variants[0].field_accuracy == 0.75
    line = _record().model_dump(mode="json")
    del line["format_version"]
    assert parse_model(CaseRecord, line, where="records.jsonl:1") == _record()


def test_an_unknown_key_is_refused_naming_the_key(tmp_path: Path) -> None:
    line = {**_record().model_dump(mode="json"), "surprise_key": 1}
    with pytest.raises(RunFileError, match=r"^records\.jsonl:3: does not match CaseRecord: surprise_key: "):
        parse_model(CaseRecord, line, where="records.jsonl:3")
    run = tmp_path / "run"
    run.mkdir()
    summary = _summary()
    summary["variants"] = [{"name": "R", "backend": "test", "bogus_figure": 0.5}]
    (run / SUMMARY_FILE).write_text(json.dumps(summary))
    with pytest.raises(RunFileError) as caught:
        read_summary(run)
    message = str(caught.value)
    assert message.startswith(f"{run / SUMMARY_FILE}: does not match RunSummary")
    assert "variants.0.bogus_figure" in message  # nested keys are named with their path


def test_read_lines_skips_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / RECORDS_FILE
    complete = [_record("c0"), _record("c1")]
    torn = _record("c2").model_dump_json()[:40]  # an interrupted run's last, partial write
    path.write_text("".join(r.model_dump_json() + "\n" for r in complete) + torn)
    assert list(read_lines(path, CaseRecord)) == complete


def test_read_lines_refuses_an_undecodable_middle_line(tmp_path: Path) -> None:
    """Only the last line can be torn; a damaged line elsewhere is an error naming file and line."""
    path = tmp_path / RECORDS_FILE
    first, last = _record("c0"), _record("c2")
    path.write_text(
        first.model_dump_json() + "\n" + '{"variant": "Q4_K_M", "case_' + "\n" + last.model_dump_json() + "\n"
    )
    with pytest.raises(RunFileError, match=rf"^{re.escape(str(path))}:2: not JSON"):
        list(read_lines(path, CaseRecord))


def test_appending_after_a_torn_line_loses_no_record(tmp_path: Path) -> None:
    """A worker killed mid-write leaves a partial line; the next writer cuts it off before appending."""
    path = tmp_path / RECORDS_FILE
    earlier = [_record("c0"), _record("c1")]
    torn = _record("c2").model_dump_json()[:40]
    path.write_text("".join(r.model_dump_json() + "\n" for r in earlier) + torn)
    sink = JsonLines(path)
    later = [_record("c3"), _record("c4")]
    for record in later:
        sink.append(record)
    sink.close()
    assert [r.case_id for r in read_lines(path, CaseRecord)] == ["c0", "c1", "c3", "c4"]


def test_appending_to_a_file_of_one_torn_line(tmp_path: Path) -> None:
    path = tmp_path / RECORDS_FILE
    path.write_text('{"variant": "R", "ca')
    sink = JsonLines(path)
    sink.append(_record("c0"))
    sink.close()
    assert [r.case_id for r in read_lines(path, CaseRecord)] == ["c0"]


def test_read_lines_refuses_a_middle_line_that_is_json_but_not_a_record(tmp_path: Path) -> None:
    path = tmp_path / RECORDS_FILE
    path.write_text(
        _record("c0").model_dump_json() + "\n" + '{"variant": "Q4_K_M"}\n' + _record("c2").model_dump_json()
    )
    with pytest.raises(
        RunFileError, match=rf"^{re.escape(str(path))}:2: does not match CaseRecord: case_id: Field required"
    ):
        list(read_lines(path, CaseRecord))


def test_load_run_without_summary_json_names_the_path(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(RunFileError, match=rf"^{re.escape(str(run / SUMMARY_FILE))}: no such file$"):
        load_run(run)
    with pytest.raises(
        RunFileError, match=rf"^{re.escape(str(tmp_path / 'nowhere' / SUMMARY_FILE))}: no such file$"
    ):
        load_run(tmp_path / "nowhere")


def test_load_run_reads_every_file_through_its_model(tmp_path: Path) -> None:
    run_dir = make_run(
        tmp_path / "run",
        {"R": [{"a": 1.0, "b": 0.5}], "Q": [{"a": 0.0, "b": 0.5}]},
        footprints={"R": 2.0, "Q": 1.0},
    )
    run = load_run(run_dir)
    assert [v.name for v in run.summary.variants] == ["R", "Q"]
    assert run.summary.entry("Q") is run.summary.variants[1]
    assert run.summary.entry("nope") is None
    assert set(run.variants.by_name()) == {"R", "Q"}
    assert {(r.variant, r.fields["a"]) for r in run.records()} == {("R", 1.0), ("Q", 0.0)}
    (run_dir / VARIANTS_FILE).unlink()  # variants.json is optional: an empty file is assumed
    assert load_run(run_dir).variants.variants == []
