"""Tool parameters with `$ref`s (issue 46): pydantic's `$defs` inlined into the record schema, and
what cannot be inlined (recursive, dangling, remote, exponential) refused by name, never a crash."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from evaluators.task_models import ToolCallingTask
from quantgate.cli._main import main
from quantgate.inputs._dataset import check_dataset, load_dataset
from quantgate.inputs._schema_refs import MAX_SCHEMAS, inline_refs
from tests.fakes import write_dataset


class When(BaseModel):
    day: str
    hour: int


class Booking(BaseModel):
    when: When
    guests: int


def _task(parameters: dict[str, Any]) -> dict[str, Any]:
    function = {"name": "book", "description": "Book a table", "parameters": parameters}
    return {"kind": "tool_calling", "tools": [{"type": "function", "function": function}]}


def _call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"call": {"name": "book", "arguments": arguments}}


def _errors(problems: list[Any]) -> list[str]:
    return [str(p) for p in problems if p.severity == "error"]


def test_pydantic_parameters_are_inlined_and_golds_checked_against_them(tmp_path):
    parameters = Booking.model_json_schema()
    assert "$defs" in parameters
    lines = [
        {"id": "a", "text": "t", "expected": _call({"when": {"day": "mon", "hour": 8}, "guests": 2})},
        {"id": "b", "text": "t", "expected": _call({"when": {"day": "mon", "hour": "8"}, "guests": 2})},
    ]
    root = write_dataset(tmp_path / "d", lines, schema=None, task=_task(parameters))
    dataset, problems = check_dataset(root)
    assert _errors(problems) == [
        "cases.jsonl:2: expected.call.arguments.when.hour: '8' is not of type 'integer' "
        "(the parameters of 'book')"
    ]
    dataset = load_dataset(root, skip_invalid_cases=True)
    arguments = dataset.schema["properties"]["call"]["anyOf"][1]["properties"]["arguments"]
    assert "$ref" not in json.dumps(arguments)
    assert "$defs" not in arguments
    assert arguments["properties"]["when"]["properties"]["hour"] == {"title": "Hour", "type": "integer"}
    task = dataset.task
    assert isinstance(task, ToolCallingTask)
    assert task.tools[0].function.parameters == arguments


NODE: dict[str, Any] = {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}
RECURSIVE: dict[str, Any] = {
    "type": "object",
    "properties": {"next": {"$ref": "#/$defs/Node"}},
    "$defs": {"Node": NODE},
}
WIDE = {
    f"d{i}": {
        "type": "object",
        "properties": {"a": {"$ref": f"#/$defs/d{i + 1}"}, "b": {"$ref": f"#/$defs/d{i + 1}"}},
    }
    for i in range(20)
}
WIDE["d20"] = {"type": "string"}
PARAMETERS = "task.json: tools[0].function.parameters"


@pytest.mark.parametrize(
    ("parameters", "expected"),
    [
        (
            {"type": "object", "properties": {"when": {"$ref": "#"}}},
            "properties.when.$ref: '#' is recursive (it refers to a schema that contains it)",
        ),
        ({"type": "object", "$ref": "#"}, "$ref: '#' is recursive (it refers to a schema that contains it)"),
        (
            RECURSIVE,
            "$defs.Node.properties.next.$ref: '#/$defs/Node' is recursive "
            "(it refers to a schema that contains it)",
        ),
        (
            {"type": "object", "properties": {"when": {"$ref": "#/$defs/When"}}},
            "properties.when.$ref: '#/$defs/When' points to nothing in the schema",
        ),
        (
            {"type": "object", "properties": {"when": {"$ref": "https://example.com/when.json"}}},
            "properties.when.$ref: 'https://example.com/when.json' is not a reference inside the schema "
            "(only '#/$defs/Name' ones are resolved)",
        ),
        (
            {"type": "object", "properties": {"w": {"$ref": "#/$defs/W", "minimum": 1}}, "$defs": {"W": {}}},
            "properties.w.$ref: keywords beside $ref (minimum): move them into the schema it refers to",
        ),
        (
            {"type": "object", "properties": {"w": {"$dynamicRef": "#w"}}},
            "properties.w.$dynamicRef: not supported: use $ref to a schema in $defs",
        ),
        (
            {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": WIDE},
            f"$defs.d19: more than {MAX_SCHEMAS:,} schemas once its $refs are inlined",
        ),
    ],
)
def test_a_reference_that_cannot_be_inlined_is_named(tmp_path, parameters, expected):
    root = write_dataset(tmp_path / "d", [{"id": "a", "text": "t"}], schema=None, task=_task(parameters))
    dataset, problems = check_dataset(root)
    assert dataset is None
    assert _errors(problems) == [f"{PARAMETERS}.{expected}"]


def test_datasets_check_names_a_recursive_reference_instead_of_crashing(tmp_path, capsys):
    parameters = {"type": "object", "$ref": "#"}
    lines = [{"id": "a", "text": "t", "expected": _call({})}]
    root = write_dataset(tmp_path / "d", lines, schema=None, task=_task(parameters))
    assert main(["datasets", "check", str(root)]) == 1
    err = capsys.readouterr().err
    assert f"{root}/task.json: tools[0].function.parameters.$ref: '#' is recursive" in err
    assert "unexpected error" not in err


def test_a_property_named_ref_is_a_name_and_annotations_beside_a_ref_are_kept():
    schema = {
        "type": "object",
        "properties": {"$ref": {"type": "string"}, "w": {"$ref": "#/$defs/W", "description": "when"}},
        "$defs": {"W": {"type": "string", "description": "a day"}},
    }
    assert inline_refs(schema) == {
        "type": "object",
        "properties": {"$ref": {"type": "string"}, "w": {"type": "string", "description": "when"}},
    }
