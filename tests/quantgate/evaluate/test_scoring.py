import json

import pytest

from quantgate.cli._main import main
from quantgate.evaluate._predictions import read_predictions, score_predictions
from quantgate.inputs._dataset import load_dataset
from tests.fakes import case, write_dataset


def write_predictions(path, lines):
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_score_output_raw_missing_and_unknown(tmp_path, capsys):
    root = write_dataset(tmp_path / "d", [case(1, 5.0, tags=["numbers"]), case(2, 7.0), case(3, None)])
    predictions = write_predictions(
        tmp_path / "p.jsonl",
        [
            {"id": "c1", "output": {"total": 5, "when": None}},
            {"id": "c2", "raw": '{"total": "7,00 €", "when": null}'},
            {"id": "zz", "output": {"total": 1, "when": None}},
        ],
    )
    assert main(["score", "--dataset", str(root), "--predictions", str(predictions), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    # c2's value matches once read as a number, but "7,00 €" is not schema-valid
    assert summary["fields"] == {"total": pytest.approx(2 / 3), "when": pytest.approx(2 / 3)}
    assert summary["field_accuracy"] == pytest.approx(4 / 6)
    assert summary["field_accuracy_macro"] == pytest.approx(2 / 3)
    assert summary["format_validity"] == pytest.approx(1 / 3)
    assert summary["missing"] == ["c3"]
    assert summary["unknown_ids"] == ["zz"]
    assert summary["slices"] == {"numbers": 1.0}


def test_malformed_prediction_lines_are_named_and_the_rest_scored(tmp_path, capsys):
    root = write_dataset(tmp_path / "d", [case(1, 5.0), case(2, 7.0)])
    predictions = write_predictions(
        tmp_path / "p.jsonl",
        [
            {"id": "c1", "output": {"total": 5, "when": None}},
            "{broken",
            {"id": "c2"},
            {"id": "c1", "output": {"total": 6, "when": None}},
        ],
    )
    assert main(["score", "--dataset", str(root), "--predictions", str(predictions)]) == 1
    out, err = capsys.readouterr()
    assert "p.jsonl:2:" in err
    assert "p.jsonl:3: give exactly one of 'output'" in err
    assert "p.jsonl:4: id: duplicate id 'c1'" in err
    assert "total" in out
    assert "missing predictions (1, scored as failures): c2" in out


def test_a_prediction_line_that_is_not_utf8_is_named_and_the_rest_scored(tmp_path, capsys):
    """One bad byte refused the whole predictions file, naming no line (the same defect as a
    dataset's, issue 46): the line is named and skipped, every other one is scored."""
    root = write_dataset(tmp_path / "d", [case(1, 5.0), case(2, 7.0), case(3, 1.0)])
    lines = [
        json.dumps({"id": f"c{i}", "output": {"total": t, "when": None}}) for i, t in ((1, 5), (2, 7), (3, 1))
    ]
    predictions = tmp_path / "p.jsonl"
    predictions.write_bytes(
        b"\n".join([lines[0].encode(), b'{"id": "c2", "raw": "\xff\xfe"}', lines[2].encode()])
    )
    found, problems = read_predictions(predictions)
    assert sorted(found) == ["c1", "c3"]
    assert [(p.line, p.message) for p in problems] == [
        (2, "not UTF-8: invalid start byte at byte 22 of the line")
    ]
    assert main(["score", "--dataset", str(root), "--predictions", str(predictions)]) == 1
    out, err = capsys.readouterr()
    assert "p.jsonl:2: not UTF-8" in err
    assert "missing predictions (1, scored as failures): c2" in out


def test_unparseable_raw_output_fails_its_fields(tmp_path):
    root = write_dataset(tmp_path / "d", [case(1, 5.0)])
    predictions = write_predictions(tmp_path / "p.jsonl", [{"id": "c1", "raw": "total is five"}])
    report = score_predictions(load_dataset(root), read_predictions(predictions)[0])
    assert report.summary.field_accuracy == 0.0
    assert report.summary.format_validity == 0.0
    assert report.case_scores[0].format is not None
    assert "not valid JSON" in report.case_scores[0].format.errors[0].message


def test_score_unlabeled_dataset_reports_no_accuracy(tmp_path, capsys):
    root = write_dataset(tmp_path / "u", [{"id": "a", "text": "x"}])
    predictions = write_predictions(tmp_path / "p.jsonl", [{"id": "a", "output": {"total": 1, "when": None}}])
    assert main(["score", "--dataset", str(root), "--predictions", str(predictions), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["field_accuracy"] is None
    assert summary["format_validity"] == 1.0


def test_missing_dataset_is_a_clear_error(tmp_path, capsys):
    predictions = write_predictions(tmp_path / "p.jsonl", [])
    assert main(["score", "--dataset", str(tmp_path / "none"), "--predictions", str(predictions)]) == 2
    assert "no dataset directory" in capsys.readouterr().err
