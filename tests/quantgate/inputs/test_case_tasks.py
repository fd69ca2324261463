"""Per-case tools (`quantgate.inputs._case_tasks`): a line's own `tools` give it its own task, its
gold checked against it; every bad tool named by file, line and field, as `quantgate datasets check`
prints it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluators.tasks import ToolCallingTask
from quantgate.cli._main import main
from quantgate.inputs._dataset import Case, check_dataset, load_dataset, write_dataset
from tests.fakes import CLASSIFICATION_TASK, write_classification_dataset
from tests.fakes import write_dataset as write_test_dataset

DATA = Path(__file__).parents[2] / "data" / "per-case-tools"
"""Four cases: `weather` offered task.json's tool, `money` and `joke` a currency conversion as
well, `stock` a share price lookup as well; one example of task.json's tool."""


def _tool(name: str, properties: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties or {"q": {"type": "string"}}, **more}
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


TASK = {"kind": "tool_calling", "tools": [_tool("search")]}


def _line(i: int, call: dict[str, Any] | None, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    line: dict[str, Any] = {"id": f"c{i}", "text": f"text {i}", "expected": {"call": call}}
    return line if tools is None else {**line, "tools": tools}


def _errors(root: Path) -> list[str]:
    _, problems = check_dataset(root)
    return [str(p) for p in problems if p.severity == "error"]


def _names(task: Any) -> list[str]:
    return [tool.function.name for tool in task.offered_tools]


def test_each_case_gets_the_task_s_tools_with_its_own_and_cases_with_the_same_tools_share_one():
    dataset = load_dataset(DATA)
    assert {case_id: _names(task) for case_id, task in dataset.case_tasks.items()} == {
        "weather": ["get_weather"],
        "money": ["get_weather", "convert_currency"],
        "stock": ["get_weather", "get_stock_price"],
        "joke": ["get_weather", "convert_currency"],
        "example-rome": ["get_weather"],
    }
    assert dataset.case_tasks["money"] is dataset.case_tasks["joke"]  # one task per tool set
    assert dataset.case_tasks["weather"] is dataset.task
    # variants are opened with a schema offering every tool of the dataset, each once
    branches = dataset.schema["properties"]["call"]["anyOf"]
    names = [b["properties"]["name"]["const"] for b in branches if b != {"type": "null"}]
    assert names == ["get_weather", "convert_currency", "get_stock_price"]
    assert dataset.task_of("stock").record_schema() != dataset.schema


def test_a_dataset_without_case_tools_keeps_its_schema_and_its_lines_as_they_were(tmp_path):
    before = (DATA / "task.json").read_text()
    lines = [_line(0, {"name": "search", "arguments": {"q": "x"}}), _line(1, None)]
    root = write_test_dataset(tmp_path / "plain", lines, schema=None, task=TASK)
    dataset = load_dataset(root)
    assert dataset.case_tasks == {}
    assert dataset.schema == dataset.task.record_schema()
    written = write_dataset(tmp_path / "again", schema={}, cases=dataset.cases, task=dataset.task)
    assert "tools" not in (written / "cases.jsonl").read_text()  # no `"tools": null` on each line
    assert (DATA / "task.json").read_text() == before


def test_a_case_s_tools_written_back_load_as_they_were(tmp_path):
    dataset = load_dataset(DATA)
    root = write_dataset(tmp_path / "copy", schema={}, cases=dataset.cases, task=dataset.task)
    assert load_dataset(root).case_tasks["stock"] == dataset.case_tasks["stock"]


def test_task_json_may_offer_no_tools_when_every_case_brings_its_own(tmp_path):
    lines = [_line(0, {"name": "find", "arguments": {"q": "x"}}, [_tool("find")]), _line(1, None)]
    root = write_test_dataset(
        tmp_path / "own", lines, schema=None, task={"kind": "tool_calling", "tools": []}
    )
    assert _errors(root) == [
        'cases.jsonl:2: tools: no tools: task.json offers none ("tools": []), so every case must bring '
        'its own ("tools": [{"type": "function", "function": {...}}])'
    ]
    root = write_test_dataset(
        tmp_path / "all", lines[:1], schema=None, task={"kind": "tool_calling", "tools": []}
    )
    dataset = load_dataset(root)
    assert isinstance(dataset.task, ToolCallingTask)
    assert _names(dataset.task_of("c0")) == ["find"]


def test_bad_tools_are_named_with_the_case_s_line(tmp_path):
    unresolved = _tool("lookup", {"when": {"$ref": "#/$defs/When"}})
    lines = [
        _line(0, None, [unresolved]),
        _line(1, None, [_tool("lookup"), _tool("lookup")]),
        _line(2, {"name": "lookup", "arguments": {"q": "x"}}, [_tool("find")]),
        _line(3, {"name": "find", "arguments": {"q": 3}}, [_tool("find")]),
        _line(4, {"name": "find", "arguments": {"q": "x"}}, [_tool("find")]),
    ]
    root = write_test_dataset(tmp_path / "bad", lines, schema=None, task=TASK)
    assert _errors(root) == [
        "cases.jsonl:1: tools[0].function.parameters.properties.when.$ref: '#/$defs/When' points to "
        "nothing in the schema",
        "cases.jsonl:2: tools: tool name 'lookup' is used twice",
        "cases.jsonl:3: expected.call.name: 'lookup' is not one of the 2 tools offered to the case",
        "cases.jsonl:4: expected.call.arguments.q: 3 is not of type 'string' (the parameters of 'find')",
    ]


def test_an_example_s_tools_are_checked_as_a_case_s(tmp_path):
    lines = [_line(0, None)]
    examples = [_line(9, {"name": "find", "arguments": {"q": "x"}}, [_tool("find"), _tool("find")])]
    root = write_test_dataset(tmp_path / "ex", lines, schema=None, task=TASK, examples=examples)
    assert _errors(root) == ["examples.jsonl:1: tools: tool name 'find' is used twice"]


def test_only_a_task_that_offers_tools_takes_a_case_s_tools(tmp_path):
    root = write_classification_dataset(tmp_path / "c", ["card_lost"])
    line = {"id": "x", "text": "lost my card", "expected": {"label": "card_lost"}, "tools": [_tool("f")]}
    with (root / "cases.jsonl").open("a") as cases:
        cases.write(json.dumps(line) + "\n")
    assert CLASSIFICATION_TASK["kind"] == "classification"
    assert _errors(root) == [
        "cases.jsonl:2: tools: a classification task offers no tools to call; remove them"
    ]


def test_datasets_check_names_a_bad_case_tool_with_its_line(tmp_path, capsys):
    lines = [_line(0, {"name": "nowhere", "arguments": {}}, [_tool("find")])]
    root = write_test_dataset(tmp_path / "cli", lines, schema=None, task=TASK)
    assert main(["datasets", "check", str(root)]) != 0
    err = capsys.readouterr()
    assert "cases.jsonl:1: expected.call.name: 'nowhere' is not one of the 2 tools offered to the case" in (
        err.out + err.err
    )
    assert main(["datasets", "check", str(DATA)]) == 0
    assert (
        "per-case-tools: tool_calling, 1 tools; 4 cases (4 labeled), 1 examples, 3 with their own tools"
        in (capsys.readouterr().out)
    )


def test_a_case_line_keeps_its_tools_only_when_it_has_them():
    assert "tools" not in Case(id="a", text="t").model_dump(exclude_none=True)
    case = Case.model_validate({"id": "a", "text": "t", "tools": [_tool("f")]})
    assert case.tools is not None
    assert case.tools[0].function.name == "f"
