"""task.json: datasets of each task kind loaded and checked, and every bad input named by file,
line and field."""

import json
from typing import Any

import pytest

from evaluators.tasks import ClassificationTask, ExtractionTask, ToolCallingTask
from quantgate.inputs._dataset import bundled_datasets, check_dataset, load_dataset, write_dataset
from tests.fakes import CLASSIFICATION_TASK, LABELS, TOTAL_SCHEMA, case, write_classification_dataset
from tests.fakes import write_dataset as write_test_dataset

WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
            "required": ["city"],
        },
    },
}
TOOL_TASK = {"kind": "tool_calling", "tools": [WEATHER]}


def errors(problems):
    return [str(p) for p in problems if p.severity == "error"]


def test_a_classification_dataset_loads_with_its_derived_schema(tmp_path):
    dataset = load_dataset(write_classification_dataset(tmp_path / "c", ["card_lost", "card_arrival"]))
    assert dataset.task == ClassificationTask(labels=tuple(LABELS))
    assert dataset.schema == {
        "type": "object",
        "properties": {"label": {"type": "string", "enum": LABELS, "description": "the label that applies"}},
        "required": ["label"],
        "additionalProperties": False,
    }
    assert [(leaf.name, leaf.kind, leaf.enum) for leaf in dataset.spec.leaves()] == [
        ("label", "enum", tuple(LABELS))
    ]
    assert [c.expected for c in dataset.cases] == [{"label": "card_lost"}, {"label": "card_arrival"}]
    assert dataset.examples[0].expected == {"label": "card_arrival"}


def test_without_task_json_a_dataset_is_extraction_and_keeps_its_sha256(tmp_path):
    root = write_test_dataset(tmp_path / "x", [case(0)])
    before = load_dataset(root)
    assert before.task == ExtractionTask()
    assert before.schema == TOTAL_SCHEMA
    (root / "task.json").write_text('{"kind": "extraction"}')
    after = load_dataset(root)
    assert after.task == ExtractionTask()
    assert after.sha256 != before.sha256  # task.json is part of what the data is


def test_the_sha256_includes_task_json(tmp_path):
    root = write_classification_dataset(tmp_path / "c", ["card_lost"])
    first = load_dataset(root).sha256
    (root / "task.json").write_text(json.dumps({**CLASSIFICATION_TASK, "labels": [*LABELS, "refund"]}))
    assert load_dataset(root).sha256 != first


def test_a_label_outside_the_set_is_named_with_file_line_and_field(tmp_path):
    root = write_classification_dataset(tmp_path / "c", ["card_lost", "foo", "card_lost"])
    dataset, problems = check_dataset(root)
    assert dataset is None
    assert errors(problems) == [
        "cases.jsonl:2: expected.label: 'foo' is not one of the 3 labels in task.json"
    ]


def test_an_example_with_a_label_outside_the_set_is_named_too(tmp_path):
    bad = [{"id": "e0", "text": "x", "expected": {"label": "refund"}}]
    _, problems = check_dataset(write_classification_dataset(tmp_path / "c", ["card_lost"], examples=bad))
    assert errors(problems) == [
        "examples.jsonl:1: expected.label: 'refund' is not one of the 3 labels in task.json"
    ]


def test_a_classification_gold_of_the_wrong_shape_is_named(tmp_path):
    root = write_test_dataset(
        tmp_path / "c",
        [
            {"id": "a", "text": "t", "expected": {"labels": ["card_lost"]}},
            {"id": "b", "text": "t", "expected": {"label": 3}},
            {"id": "c", "text": "t", "expected": {"label": "card_lost", "score": 1}},
        ],
        schema=None,
        task=CLASSIFICATION_TASK,
    )
    _, problems = check_dataset(root)
    assert errors(problems) == [
        "cases.jsonl:1: expected.label: missing",
        "cases.jsonl:2: expected.label: 3 is not one of the 3 labels in task.json",
        "cases.jsonl:3: expected: Additional properties are not allowed ('score' was unexpected)",
    ]


def test_multi_label_golds_are_checked_label_by_label(tmp_path):
    task = {**CLASSIFICATION_TASK, "multi_label": True}
    lines = [
        {"id": "a", "text": "t", "expected": {"labels": ["card_lost", "top_up_failed"]}},
        {"id": "b", "text": "t", "expected": {"labels": ["card_lost", "nope"]}},
        {"id": "c", "text": "t", "expected": {"labels": []}},
    ]
    root = write_test_dataset(tmp_path / "m", lines, schema=None, task=task)
    _, problems = check_dataset(root)
    assert errors(problems) == [
        "cases.jsonl:2: expected.labels: 'nope' is not one of the 3 labels in task.json"
    ]
    (root / "cases.jsonl").write_text("\n".join(json.dumps(x) for x in (lines[0], lines[2])) + "\n")
    dataset = load_dataset(root)
    assert dataset.schema["properties"]["labels"]["items"] == {"type": "string", "enum": LABELS}
    assert [(leaf.name, leaf.kind, leaf.item_kind) for leaf in dataset.spec.leaves()] == [
        ("labels", "scalar_array", "enum")
    ]


KINDS = "(one of extraction, classification, tool_calling, generation)"
NOT_AN_OBJECT = 'must be a JSON Schema of an object ({"type": "object", "properties": ...})'


def _tool(function):
    return {"kind": "tool_calling", "tools": [{"type": "function", "function": function}]}


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("{", "not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ("[]", 'must be a JSON object such as {"kind": "classification", "labels": [...]}'),
        ({"labels": ["a"]}, f"kind: missing {KINDS}"),
        ({"kind": "ranking"}, f"kind: 'ranking' is not a task kind {KINDS}"),
        ({"kind": ["classification"]}, f"kind: ['classification'] is not a task kind {KINDS}"),
        (
            '{"kind": "generation", "instruction": "\\ud800"}',
            "a lone surrogate '\\ud800' at instruction: a \\uD800-\\uDFFF escape without its pair, "
            "not text that UTF-8 can write",
        ),
        ({"kind": "classification", "labels": []}, "labels: at least one label is needed"),
        ({"kind": "classification", "labels": ["a", "b", "a"]}, "labels: label 'a' is listed twice"),
        ({"kind": "classification", "labels": ["a"], "multi": True}, "multi: Extra inputs are not permitted"),
        ({"kind": "classification"}, "labels: Field required"),
        (  # issue 46: "yes" was taken as true
            {"kind": "classification", "labels": ["a"], "multi_label": "yes"},
            "multi_label: Input should be a valid boolean",
        ),
        (
            {"kind": "classification", "labels": ["a"], "multi_label": 1},
            "multi_label: Input should be a valid boolean",
        ),
        (  # issue 46: 100,000 labels passed, and a run then recorded nothing for minutes
            {"kind": "classification", "labels": [f"l{i}" for i in range(100_000)]},
            "labels: 100,000 labels, more than 500: every case's prompt lists every label, and so many "
            "leave no room in the model's context for the case",
        ),
        (
            {"kind": "tool_calling", "tools": [WEATHER, WEATHER]},
            "tools: tool name 'get_weather' is used twice",
        ),
        (
            _tool({"name": "f", "parameters": {"type": "array"}}),
            f"tools[0].function.parameters: {NOT_AN_OBJECT}",
        ),
        (
            _tool({"name": "a b"}),
            "tools[0].function.name: 'a b' is not a function name (1 to 64 letters, digits, '_' or '-')",
        ),
    ],
)
def test_a_bad_task_json_is_named_with_its_field(tmp_path, task, expected):
    root = write_test_dataset(tmp_path / "t", [{"id": "a", "text": "t"}], schema=None, task=task)
    dataset, problems = check_dataset(root)
    assert dataset is None
    assert errors(problems) == [f"task.json: {expected}"]


def test_a_schema_json_beside_a_derived_schema_is_an_error(tmp_path):
    root = write_classification_dataset(tmp_path / "c", ["card_lost"], schema=TOTAL_SCHEMA)
    _, problems = check_dataset(root)
    assert errors(problems) == [
        "schema.json: not used by a classification task: its record schema is derived from task.json "
        "(docs/tasks.md); remove schema.json"
    ]


def test_extraction_without_schema_json_still_needs_it(tmp_path):
    root = write_test_dataset(tmp_path / "x", [case(0)], schema=None, task={"kind": "extraction"})
    _, problems = check_dataset(root)
    assert errors(problems) == ["schema.json: missing"]


def test_a_tool_calling_dataset_loads_and_its_golds_are_checked_against_the_tools(tmp_path):
    good = [
        {
            "id": "a",
            "text": "weather in Oslo?",
            "expected": {"call": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
        },
        {"id": "b", "text": "tell me a joke", "expected": {"call": None}},
    ]
    root = write_test_dataset(tmp_path / "t", good, schema=None, task=TOOL_TASK)
    dataset = load_dataset(root)
    assert isinstance(dataset.task, ToolCallingTask)
    call = dataset.schema["properties"]["call"]
    assert call["anyOf"][0] == {"type": "null"}
    assert call["anyOf"][1]["properties"] == {
        "name": {"const": "get_weather"},
        "arguments": WEATHER["function"]["parameters"],
    }
    assert [leaf.name for leaf in dataset.spec.leaves()] == ["call"]
    bad = [
        *good,
        {"id": "c", "text": "t", "expected": {"call": {"name": "get_time", "arguments": {}}}},
        {
            "id": "d",
            "text": "t",
            "expected": {"call": {"name": "get_weather", "arguments": {"city": 3, "days": 0}}},
        },
        {"id": "e", "text": "t", "expected": {"call": {"name": "get_weather", "arguments": {}}}},
        {"id": "f", "text": "t", "expected": {}},
    ]
    _, problems = check_dataset(write_test_dataset(tmp_path / "bad", bad, schema=None, task=TOOL_TASK))
    of_weather = "(the parameters of 'get_weather')"
    assert errors(problems) == [
        "cases.jsonl:3: expected.call.name: 'get_time' is not one of the 1 tools offered to the case",
        f"cases.jsonl:4: expected.call.arguments.city: 3 is not of type 'string' {of_weather}",
        f"cases.jsonl:4: expected.call.arguments.days: 0 is less than the minimum of 1 {of_weather}",
        f"cases.jsonl:5: expected.call.arguments: 'city' is a required property {of_weather}",
        "cases.jsonl:6: expected.call: missing (null when no tool fits)",
    ]


def test_a_generation_case_without_its_text_is_named(tmp_path):
    lines = [
        {"id": "a", "text": "name[Aromi], food[Italian]", "expected": {"text": "Aromi serves Italian food."}},
        {"id": "b", "text": "name[Bibimbap]", "expected": {"summary": "x"}},
    ]
    root = write_test_dataset(tmp_path / "g", lines, schema=None, task={"kind": "generation"})
    _, problems = check_dataset(root)
    assert errors(problems) == ["cases.jsonl:2: expected.text: a generation case needs its gold text"]


def test_write_dataset_writes_task_json_instead_of_schema_json(tmp_path):
    source = load_dataset(write_classification_dataset(tmp_path / "c", ["card_lost", "top_up_failed"]))
    copy = write_dataset(
        tmp_path / "copy",
        schema=source.schema,
        cases=source.cases,
        examples=source.examples,
        task=source.task,
    )
    assert sorted(p.name for p in copy.iterdir()) == ["cases.jsonl", "examples.jsonl", "task.json"]
    again = load_dataset(copy)
    assert (again.task, again.schema, again.cases) == (source.task, source.schema, source.cases)


def test_bundled_datasets_list_those_with_task_json_only(tmp_path, monkeypatch):
    from quantgate.inputs import _dataset as dataset_module

    write_classification_dataset(tmp_path / "labels", ["card_lost"])
    write_test_dataset(tmp_path / "fields", [case(0)])
    (tmp_path / "neither").mkdir()
    monkeypatch.setattr(dataset_module, "bundled_root", lambda: tmp_path)
    assert bundled_datasets() == ["fields", "labels"]
