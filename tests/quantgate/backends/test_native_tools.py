"""The tools of a tool-calling task's record schema, and a native tool-calling answer read back into
the task's record (`quantgate.backends._native_tools`, shared by Ollama and `openai:` variants)."""

import json

from langchain_core.messages import AIMessageChunk
from langchain_core.messages.tool import invalid_tool_call
from langchain_core.outputs import ChatGenerationChunk

from evaluators.task_models import ToolCallingTask
from quantgate.backends._native_tools import (
    MALFORMED_CALL,
    NativeTools,
    native_tools_of,
    task_tools,
    tool_answer,
)

NOW = {"type": "function", "function": {"name": "now", "description": "The time",
       "parameters": {"type": "object", "properties": {}}}}  # fmt: skip
ADD = {"type": "function", "function": {"name": "add", "description": "",
       "parameters": {"type": "object", "properties": {"a": {"type": "number"}}}}}  # fmt: skip


def test_the_tools_of_one_call_and_of_several_calls():
    one = ToolCallingTask.model_validate({"tools": [NOW, ADD]}).record_schema()
    many = ToolCallingTask.model_validate({"tools": [NOW, ADD], "calls": "many"}).record_schema()
    assert native_tools_of(one) == NativeTools(tools=[NOW, ADD], many=False)
    assert native_tools_of(many) == NativeTools(tools=[NOW, ADD], many=True)
    assert task_tools(one) == [NOW, ADD]
    assert task_tools(many) is None  # one call's tools only (the chat template's)


def test_a_task_whose_cases_bring_their_tools_has_none_of_its_own():
    schema = ToolCallingTask.model_validate({"tools": []}).record_schema()
    assert native_tools_of(schema) == NativeTools(tools=[], many=False)
    assert task_tools(schema) is None


def test_other_schemas_have_no_tools():
    assert native_tools_of({"type": "object", "properties": {"calls": {"type": "string"}}}) is None
    assert (
        native_tools_of({"type": "object", "properties": {"call": {"anyOf": [{"type": "string"}]}}}) is None
    )
    assert native_tools_of({"type": "object", "properties": {"label": {"enum": ["a"]}}}) is None


def _answer(message, many):
    return "".join(c.text for c in tool_answer(iter([ChatGenerationChunk(message=message)]), many=many))


def _calls(*names):
    return [{"name": n, "args": {}, "id": str(i), "type": "tool_call"} for i, n in enumerate(names)]


def test_several_calls_are_the_calls_record_of_a_task_of_several_calls():
    two = AIMessageChunk(content="", tool_calls=_calls("now", "add"))
    assert json.loads(_answer(two, many=True)) == {
        "calls": [{"name": "now", "arguments": {}}, {"name": "add", "arguments": {}}]
    }
    assert json.loads(_answer(AIMessageChunk(content="No tool fits."), many=True)) == {"calls": []}
    assert json.loads(_answer(two, many=False))["call"] == [  # one call asked for: the schema refuses it
        {"name": "now", "arguments": {}},
        {"name": "add", "arguments": {}},
    ]


def test_a_call_whose_arguments_are_not_json_is_a_malformed_answer_naming_them():
    bad = invalid_tool_call(name="add", args="one", id="1", error="not valid JSON")
    answer = _answer(
        AIMessageChunk(content="", tool_calls=_calls("now"), invalid_tool_calls=[bad]), many=True
    )
    assert answer == f"{MALFORMED_CALL}: not valid JSON (tool add, arguments 'one')"
