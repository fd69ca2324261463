"""summary.json of format 13, whose variants kept their task kind's figures flat beside the common
ones (null for the other kinds), read as format 14: each variant's kind figures in `kind_figures`.
The files in tests/data/summary-format-13/ were written by quantgate at format 13 from the runs of
`tests.quantgate.render.task_kind_runs` (fake chat models; figures counted by hand there)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from evaluators.chrf import GenerationSummary
from evaluators.classification_figures import ClassificationSummary
from evaluators.tool_calls import ToolCallSummary
from quantgate.render._summary_table import render_summary
from quantgate.render._task_figures import task_figures
from quantgate.rundir._files import SUMMARY_FILE
from quantgate.rundir._jsonfile import RunFileError, parse_model
from quantgate.rundir._schemas import json_schema
from quantgate.rundir._store import read_summary
from quantgate.rundir._summary import RunSummary

FORMAT_13 = Path(__file__).parents[2] / "data" / "summary-format-13"


def _written(kind: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((FORMAT_13 / f"{kind}.json").read_text(encoding="utf-8"))
    assert value["format_version"] == 13
    return value


@pytest.mark.parametrize(
    ("kind", "model"),
    [
        ("classification", ClassificationSummary),
        ("generation", GenerationSummary),
        ("tool_calling", ToolCallSummary),
    ],
)
def test_a_format_13_summary_is_read_with_its_kinds_figures_in_kind_figures(kind, model, tmp_path):
    written = _written(kind)
    (tmp_path / SUMMARY_FILE).write_text(json.dumps(written), encoding="utf-8")
    summary = read_summary(tmp_path)
    assert summary.format_version == 15
    for old, entry in zip(written["variants"], summary.variants, strict=True):
        figures = entry.kind_figures
        assert isinstance(figures, model)
        assert figures.kind == kind
        moved = figures.model_dump(mode="json", exclude={"kind"})
        # every figure as the old file had it; one added since (tool calling's by_category) is None
        assert moved == {key: old.get(key) for key in moved}
    dumped = summary.model_dump(mode="json")["variants"][1]
    assert not set(dumped) & set(ClassificationSummary.model_fields) - {"kind"}  # none left flat


def test_the_figures_read_from_format_13_are_those_counted_by_hand():
    classification, generation, tools = (parse_model(RunSummary, _written(k), where=k) for k in (
        "classification", "generation", "tool_calling"
    ))  # fmt: skip
    quant = classification.variants[1].kind_figures
    assert isinstance(quant, ClassificationSummary)
    # c1 and c4 (gold card_arrival) taken for card_lost and top_up_failed: 4 of 6, macro-F1 32/63
    assert quant.label_accuracy == pytest.approx(4 / 6)
    assert quant.macro_f1 == pytest.approx(32 / 63)
    assert quant.confusion == [[0, 1, 1, 0], [0, 3, 0, 0], [0, 0, 1, 0]]
    texts = generation.variants[1].kind_figures
    assert isinstance(texts, GenerationSummary)
    assert texts.generation_cases == 2
    assert texts.length_ratio == pytest.approx((1 + 5 / 13) / 2)
    calls = tools.variants[1].kind_figures
    assert isinstance(calls, ToolCallSummary)
    assert calls.tool_selection_accuracy == 0.5
    assert calls.false_abstention_rate == pytest.approx(1 / 3)


def test_a_format_13_summary_shows_its_kind_figures_as_format_13_did():
    summary = parse_model(RunSummary, _written("classification"), where="classification.json")
    figures = task_figures(summary)
    assert figures is not None
    assert figures.rows == [
        ["ref *", "100.0%", "1.000", "100.0% (card_arrival)", "0", "—", "—", "—", "—", "—", "—"],
        ["quant", "66.7%", "0.508", "0.0% (card_arrival)", "0", "—", "—", "—", "—", "—", "—"],
    ]
    assert "classification figures:" in render_summary(summary)


def test_an_extraction_summary_of_format_13_has_no_kind_figures():
    written = _written("classification")
    written["dataset"]["task"] = None  # a run of before task kinds: extraction
    for entry in written["variants"]:
        entry.update(dict.fromkeys(ClassificationSummary.model_fields.keys() - {"kind"}))
    summary = parse_model(RunSummary, written, where="summary.json")
    assert [entry.kind_figures for entry in summary.variants] == [None, None]


def test_another_kinds_figure_measured_in_a_format_13_summary_is_refused_by_name():
    written = _written("classification")
    written["variants"][1]["chrf"] = 0.5  # a generation figure in a classification run
    with pytest.raises(RunFileError, match=r"^summary\.json: .*variants\.1\.chrf: Extra inputs"):
        parse_model(RunSummary, written, where="summary.json")


@pytest.mark.parametrize("kind", ["classification", "generation", "tool_calling"])
def test_a_summary_read_from_format_13_validates_against_the_summary_schema(kind):
    summary = parse_model(RunSummary, _written(kind), where=f"{kind}.json")
    schema = json_schema(RunSummary, SUMMARY_FILE)
    errors = list(Draft202012Validator(schema).iter_errors(summary.model_dump(mode="json")))
    assert errors == []
    wrong = summary.model_dump(mode="json")
    wrong["variants"][1]["kind_figures"]["kind"] = "no_such_kind"
    assert list(Draft202012Validator(schema).iter_errors(wrong))  # the tag is one of the built-in kinds
