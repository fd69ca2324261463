"""The builders of the run files: the summary's trivial baselines."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from evaluators.baselines import baseline_scores
from quantgate.rundir._build import baselines_info, new_summary
from quantgate.rundir._files import SUMMARY_FILE
from quantgate.rundir._schemas import json_schema
from quantgate.rundir._summary import DatasetInfo, RunSummary

SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": ["string", "null"]}, "b": {"type": ["integer", "null"]}},
}
GOLDS: dict[str, dict[str, Any] | None] = {
    "c1": {"a": "x", "b": 1},
    "c2": {"a": None, "b": 1},
    "c3": {"a": "y", "b": None},
    "c4": None,
}


def test_baselines_info_has_each_baselines_micro_and_per_field_accuracy():
    info = baselines_info(baseline_scores(golds=GOLDS, tags={}, schema=SCHEMA))
    assert info.cases == 3
    # always null: a right on c2, b on c3 (2 of 6); majority a="x", b=1: a on c1, b on c1 and c2 (3 of 6)
    assert info.always_null == pytest.approx(2 / 6)
    assert info.majority == pytest.approx(3 / 6)
    assert list(info.fields) == ["a", "b"]
    assert info.fields["a"].always_null == pytest.approx(1 / 3)
    assert info.fields["a"].majority == pytest.approx(1 / 3)
    assert info.fields["b"].model_dump() == pytest.approx({"always_null": 1 / 3, "majority": 2 / 3})


def test_baselines_info_without_labeled_cases_has_no_figures():
    info = baselines_info(baseline_scores(golds={"c1": None}, tags={}, schema=SCHEMA))
    assert (info.cases, info.always_null, info.majority, info.fields) == (0, None, None, {})


def test_baselines_survive_a_summary_round_trip():
    info = baselines_info(baseline_scores(golds=GOLDS, tags={}, schema=SCHEMA))
    summary = RunSummary(
        run_id="r",
        quantgate_version="test",
        status="complete",
        dataset=DatasetInfo(name="d", path="p", sha256="s", cases=4),
        baselines=info,
    )
    again = RunSummary.model_validate_json(summary.model_dump_json())
    assert again.baselines == info
    assert again.baselines is not None
    assert again.baselines.fields["b"].majority == pytest.approx(2 / 3)
    old = RunSummary.model_validate_json(summary.model_dump_json(exclude={"baselines"}))
    assert old.baselines is None  # a run written before baselines were recorded still reads


def test_a_new_summary_carries_the_baselines_and_its_schema_accepts_them():
    info = baselines_info(baseline_scores(golds=GOLDS, tags={}, schema=SCHEMA))
    summary = new_summary(
        run_id="r", dataset=DatasetInfo(name="d", path="p", sha256="s", cases=4), baselines=info
    )
    assert summary.baselines == info
    document = json.loads(summary.model_dump_json())
    assert document["baselines"]["fields"]["a"] == {"always_null": 1 / 3, "majority": 1 / 3}
    validator = Draft202012Validator(json_schema(RunSummary, SUMMARY_FILE))
    assert list(validator.iter_errors(document)) == []
    document["baselines"]["always_null"] = "high"
    errors = list(validator.iter_errors(document))
    assert [list(e.absolute_path) for e in errors] == [["baselines"]]  # the nullable object refuses it
    assert "'always_null': 'high'" in errors[0].message
