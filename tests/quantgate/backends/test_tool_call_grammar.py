"""Constrained decoding of tool calls: the grammar of a tool-calling task's derived record schema.

The record schema (`ToolCallingTask.record_schema`) makes `call` an `anyOf` of null and one branch
per tool (`name` a `const`, `arguments` the tool's parameters). These tests run the production
grammar states of both engines (llama.cpp's GBNF sampler, llguidance's matcher) over Gemma 3's
vocabulary, loaded without weights (`grammar_walks.Walker`): no model decodes.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from evaluators.tasks import ToolCallingTask, parse_task
from quantgate.backends._schema_grammar import unenforced_keywords
from quantgate.inputs._dataset import bundled_root
from tests.quantgate.backends.grammar_walks import Walker

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")


def _function(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


THREE_TOOLS = ToolCallingTask.model_validate({
    "tools": [
        _function(
            "get_weather",
            {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            ["city"],
        ),
        _function("add", {"a": {"type": "number"}, "b": {"type": "number"}}, ["a", "b"]),
        _function("tag", {"labels": {"type": "array", "items": {"type": "string"}}}, ["labels"]),
    ],
})  # fmt: skip


def _bundled_task() -> ToolCallingTask:
    task = parse_task(json.loads((bundled_root() / "tool-calls" / "task.json").read_text(encoding="utf-8")))
    assert isinstance(task, ToolCallingTask)
    return task


def _feed(walker: Walker, schema: dict[str, Any], text: str) -> tuple[str, bool]:
    """How much of `text` the grammar of `schema` takes, and whether it may end there."""
    state: Any = walker.checker.start(walker.grammar(schema))
    tokens = walker.llama.tokenize(text.encode(), add_bos=False, special=False)
    taken = 0
    for token in tokens:
        gbnf = walker.engine == "gbnf"
        if not (state._allowed(token, 0.0) if gbnf else state._matcher.validate_tokens([token])):
            break
        state.accept(token)
        taken += 1
    ends = taken == len(tokens) and (
        state._allowed(walker.end, 0.0) if walker.engine == "gbnf" else state._matcher.is_accepting()
    )
    state.close()
    return walker.llama.detokenize(tokens[:taken]).decode(), bool(ends)


@pytest.mark.parametrize(
    "text",
    [
        ' {"call": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}',
        ' {"call": {"name": "add", "arguments": {"a": 2, "b": -3.5}}}',
        ' {"call": {"name": "tag", "arguments": {"labels": ["x", "y"]}}}',
        ' {"call": null}',
    ],
)
def test_the_grammar_takes_a_call_of_each_tool_and_no_call(walker, text):
    assert _feed(walker, THREE_TOOLS.record_schema(), text) == (text, True)


@pytest.mark.parametrize(
    ("text", "refused_after"),
    [
        # a tool that is not in the list: refused at its name
        (' {"call": {"name": "send_email", "arguments": {}}}', ' {"call": {"name": "'),
        # another tool's arguments: `add` needs `a` first
        (
            ' {"call": {"name": "add", "arguments": {"city": "x"}}}',
            ' {"call": {"name": "add", "arguments": {"',
        ),
        # a value outside the argument's enum
        (
            ' {"call": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "kelvin"}}}',
            ' {"call": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "',
        ),
    ],
)
def test_the_grammar_refuses_what_no_tool_allows(walker, text, refused_after):
    taken, ends = _feed(walker, THREE_TOOLS.record_schema(), text)
    assert taken == refused_after
    assert not ends


def test_every_keyword_of_the_bundled_tools_is_enforced():
    schema = _bundled_task().record_schema()
    for engine in ("gbnf", "llguidance"):
        assert unenforced_keywords(schema, engine=engine, max_items=4) == ()


def test_walks_on_the_bundled_tools_are_valid_calls(walker):
    """Random outputs of the grammar: each a record valid against the derived schema, some of them calls."""
    schema = _bundled_task().record_schema()
    grammar = walker.grammar(schema)
    rng = random.Random(3)
    outputs = [walker.walk(grammar, rng) for _ in range(20)]
    assert None not in outputs  # every walk ended
    records = [json.loads(o) for o in outputs if o is not None]
    assert sum(r["call"] is not None for r in records) >= 3  # 4 of 20 with seed 3, on both engines
    validator = Draft202012Validator(schema)
    for record in records:
        assert list(validator.iter_errors(record)) == []


SEVERAL = THREE_TOOLS.model_copy(update={"calls": "many"})
"""The same tools, several calls per record (`{"calls": [...]}`)."""


@pytest.mark.parametrize(
    ("text", "taken"),
    [
        (' {"calls": []}', None),
        (
            ' {"calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}, '
            '{"name": "get_weather", "arguments": {"city": "Oslo"}}]}',
            None,
        ),
        (' {"calls": null}', ' {"calls":'),  # no call is an empty list
        (' {"calls": [{"name": "send_email", "arguments": {}}]}', ' {"calls": [{"name": "'),
    ],
)
def test_the_grammar_of_several_calls(walker, text, taken):
    assert _feed(walker, SEVERAL.record_schema(), text) == (taken or text, taken is None)
