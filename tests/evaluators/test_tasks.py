"""The task kinds' registry: the task models and their checks, the derived record schemas, the
classification scores (label accuracy, multi-label set F1), and every kind complete."""

import re
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evaluators import CaseScorer, FormatEvaluator
from evaluators.errors import UsageError
from evaluators.tasks import (
    TASK_KINDS,
    ClassificationTask,
    ExtractionTask,
    GenerationTask,
    Task,
    TaskKind,
    ToolCallingTask,
    check_expected,
    field_spec,
    parse_task,
)
from evaluators.validation import check_schema

DOCS = Path(__file__).parents[2] / "docs"
LABELS = ("card_arrival", "card_lost", "top_up_failed")


def test_the_classification_schema_restricts_the_label_to_the_set():
    task = ClassificationTask(labels=LABELS)
    assert task.record_schema() == {
        "type": "object",
        "properties": {
            "label": {"type": "string", "enum": list(LABELS), "description": "the label that applies"}
        },
        "required": ["label"],
        "additionalProperties": False,
    }
    validator = FormatEvaluator(schema=task.record_schema())
    assert validator.schema_errors({"label": "card_lost"}) == []
    assert [e.path for e in validator.schema_errors({"label": "refund"})] == ["label"]


def test_the_multi_label_schema_is_a_list_of_labels():
    task = ClassificationTask(labels=LABELS, multi_label=True)
    assert task.record_schema()["properties"] == {
        "labels": {
            "type": "array",
            "items": {"type": "string", "enum": list(LABELS)},
            "description": "the labels that apply",
        }
    }


def test_the_tool_calling_schema_is_null_or_one_branch_per_tool():
    parameters = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    task = parse_task(
        {
            "kind": "tool_calling",
            "tools": [
                {"type": "function", "function": {"name": "get_weather", "parameters": parameters}},
                {"type": "function", "function": {"name": "now"}},
            ],
        }
    )
    assert isinstance(task, ToolCallingTask)
    branches = task.record_schema()["properties"]["call"]["anyOf"]
    assert branches[0] == {"type": "null"}
    assert [b["properties"]["name"] for b in branches[1:]] == [{"const": "get_weather"}, {"const": "now"}]
    assert branches[1]["properties"]["arguments"] == parameters
    assert branches[2]["properties"]["arguments"] == {"type": "object", "properties": {}}
    validator = FormatEvaluator(schema=task.record_schema())
    assert validator.schema_errors({"call": None}) == []
    assert validator.schema_errors({"call": {"name": "get_weather", "arguments": {"city": "Oslo"}}}) == []
    assert validator.schema_errors({"call": {"name": "now", "arguments": {"city": "Oslo"}}}) == []
    assert validator.schema_errors({"call": {"name": "get_weather", "arguments": {}}}) != []
    assert validator.schema_errors({"call": {"name": "sunset", "arguments": {}}}) != []


def test_the_generation_schema_is_one_text():
    assert GenerationTask().record_schema() == {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "the text"}},
        "required": ["text"],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"kind": "classification", "labels": []}, "at least one label is needed"),
        ({"kind": "classification", "labels": ["a", "a"]}, "label 'a' is listed twice"),
        ({"kind": "classification", "labels": [""]}, "String should have at least 1 character"),
        ({"kind": "classification", "labels": [1]}, "Input should be a valid string"),
        (
            {
                "kind": "tool_calling",
                "tools": [{"type": "function", "function": {"name": "f"}}] * 2,
            },
            "tool name 'f' is used twice",
        ),
        (
            {
                "kind": "tool_calling",
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
            },
            "must be a JSON Schema of an object",
        ),
        (
            {
                "kind": "tool_calling",
                "tools": [
                    {
                        "type": "function",
                        "function": {"name": "f", "parameters": {"type": "object", "required": 3}},
                    }
                ],
            },
            "not a valid JSON Schema at required: 3 is not of type 'array'",
        ),
        (
            {"kind": "tool_calling", "tools": [{"type": "code", "function": {"name": "f"}}]},
            "Input should be 'function'",
        ),
        ({"kind": "generation", "labels": ["a"]}, "Extra inputs are not permitted"),
    ],
)
def test_a_bad_task_is_refused_saying_why(raw, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        parse_task(raw)


def _function(name: str, description: str = "") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description}}


def test_a_case_s_tools_replace_the_task_s_of_the_same_name_then_join_them():
    task = parse_task({"kind": "tool_calling", "tools": [_function("a"), _function("b")]})
    own = parse_task({"kind": "tool_calling", "tools": [_function("c"), _function("b", "the case's b")]})
    case_task = task.for_case(own.offered_tools)
    assert [(t.function.name, t.function.description) for t in case_task.offered_tools] == [
        ("a", ""),
        ("b", "the case's b"),
        ("c", ""),
    ]
    assert task.for_case(()) is task  # a case without tools: the task's
    assert not task.needs_case_tools
    none = parse_task({"kind": "tool_calling", "tools": []})  # every case brings its own
    assert none.needs_case_tools
    assert [t.function.name for t in none.for_case(own.offered_tools).offered_tools] == ["c", "b"]


def test_only_a_kind_that_offers_tools_takes_a_case_s_tools():
    tools = parse_task({"kind": "tool_calling", "tools": [_function("a")]}).offered_tools
    with pytest.raises(ValueError, match="a classification task offers no tools to call"):
        parse_task({"kind": "classification", "labels": ["x"]}).for_case(tools)


def test_tasks_are_frozen():
    task = ClassificationTask(labels=LABELS)
    with pytest.raises(ValidationError):
        task.multi_label = True


def test_classification_scores_label_accuracy_case_by_case():
    task = ClassificationTask(labels=LABELS)
    scorer = CaseScorer(schema=task.record_schema(), task=task)
    golds = ["card_lost", "card_arrival", "top_up_failed", "card_lost"]
    predicted = ["card_lost", "card_lost", "top_up_failed", None]  # None: no valid output
    scores = [
        scorer(
            case_id=f"c{i}",
            outputs=None if p is None else {"label": p},
            reference_outputs={"label": g},
        )
        for i, (g, p) in enumerate(zip(golds, predicted, strict=True))
    ]
    assert [s.fields.score for s in scores if s.fields] == [1.0, 0.0, 1.0, 0.0]
    assert [s.fields.fields["label"].outcome for s in scores if s.fields] == [
        "correct",
        "wrong",
        "correct",
        "no_output",
    ]


def test_multi_label_scores_the_set_f1():
    task = ClassificationTask(labels=LABELS, multi_label=True)
    scorer = CaseScorer(schema=task.record_schema(), task=task)

    def f1(gold, predicted):
        return scorer.fields(
            outputs={"labels": predicted}, reference_outputs={"labels": gold}, lang=None
        ).score

    assert f1(["card_lost", "top_up_failed"], ["top_up_failed", "card_lost"]) == 1.0
    assert f1(["card_lost", "top_up_failed"], ["card_lost", "card_arrival"]) == pytest.approx(
        0.5
    )  # P 1/2, R 1/2
    assert f1(["card_lost"], ["card_lost", "card_arrival", "top_up_failed"]) == pytest.approx(
        0.5
    )  # P 1/3, R 1
    assert f1(["card_lost"], []) == 0.0
    assert f1([], []) == 1.0  # none applies, and none was chosen


def test_agreement_uses_the_kinds_scorer_with_the_reference_record_as_gold():
    task = ClassificationTask(labels=LABELS)
    scorer = CaseScorer(schema=task.record_schema(), task=task)
    agreement = scorer.fields(
        outputs={"label": "card_lost"}, reference_outputs={"label": "card_lost"}, lang=None
    )
    assert agreement.score == 1.0
    assert scorer.fields(outputs=None, reference_outputs={"label": "card_lost"}, lang=None).score == 0.0


def test_a_kind_without_a_scorer_is_refused_before_scoring(monkeypatch):
    monkeypatch.setitem(TASK_KINDS, "generation", TaskKind(model=GenerationTask, score=None))
    with pytest.raises(UsageError, match="scoring generation cases is not yet supported"):
        CaseScorer(schema=GenerationTask().record_schema(), task=GenerationTask())


def test_check_expected_names_what_task_json_allows():
    task = ClassificationTask(labels=LABELS)
    assert check_expected(task, {"label": "card_lost"}) == []
    (problem,) = check_expected(task, {"label": "refund"})
    assert (problem.path, problem.message) == (
        "expected.label",
        "'refund' is not one of the 3 labels in task.json",
    )
    assert check_expected(ExtractionTask(), {"anything": 1}) == []


# --- every kind complete: what "Adding a task kind" in docs/development.md asks for ----------


def _sections(page: str) -> set[str]:
    return set(re.findall(r"^## `?(\w+)`?", (DOCS / page).read_text(), flags=re.MULTILINE))


@pytest.mark.parametrize("kind", list(TASK_KINDS))
def test_every_kind_is_complete(kind):
    entry = TASK_KINDS[kind]
    assert entry.model.model_fields["kind"].default == kind
    assert entry.model in typing.get_args(typing.get_args(Task)[0]), "the kind's model is in the Task union"
    assert entry.score is not None, f"{kind}: no scorer wired"
    assert entry.instruction is not None, f"{kind}: no prompt instruction in its kind's module"
    assert kind in _sections("tasks.md"), f"{kind}: no section in docs/tasks.md"
    if kind != "extraction":
        assert entry.check_expected is not TASK_KINDS["extraction"].check_expected, (
            f"{kind}: gold not checked"
        )


def test_every_kinds_example_task_derives_a_schema_the_scorer_reads():
    examples = {
        "classification": ClassificationTask(labels=LABELS),
        "tool_calling": parse_task(
            {"kind": "tool_calling", "tools": [{"type": "function", "function": {"name": "f"}}]}
        ),
        "generation": GenerationTask(),
    }
    assert set(examples) == set(TASK_KINDS) - {"extraction"}
    for kind, task in examples.items():
        schema = task.record_schema()
        assert schema is not None
        check_schema(schema)
        leaves = [leaf.name for leaf in field_spec(task, schema).leaves()]
        assert leaves == [{"classification": "label", "tool_calling": "call", "generation": "text"}[kind]]
    assert ExtractionTask().record_schema() is None  # extraction's is schema.json
