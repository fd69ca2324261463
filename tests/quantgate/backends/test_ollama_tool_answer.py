"""Reading an Ollama tool-calling answer back into the task's record, without a server."""

import json

import pytest
from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk

from evaluators.task_models import ToolCallingTask
from quantgate.backends._native_tools import MALFORMED_CALL, task_tools, tool_answer

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}  # fmt: skip
NOW = {"type": "function", "function": {"name": "now", "description": "",
       "parameters": {"type": "object", "properties": {}}}}  # fmt: skip


def _chunks(*messages):
    yield from (ChatGenerationChunk(message=m) for m in messages)


def _call(name, args):
    return {"name": name, "args": args, "id": "1", "type": "tool_call"}


def _text(chunks):
    return "".join(chunk.text for chunk in chunks)


def test_task_tools_are_the_tasks_tools_from_its_record_schema():
    task = ToolCallingTask.model_validate({"tools": [WEATHER, NOW]})
    assert task_tools(task.record_schema()) == [WEATHER, NOW]
    assert task_tools({"type": "object", "properties": {"label": {"enum": ["a", "b"]}}}) is None
    assert task_tools({"type": "object", "properties": {"call": {"type": "string"}}}) is None


@pytest.mark.parametrize(
    ("messages", "record"),
    [
        ([AIMessageChunk(content="", tool_calls=[_call("now", {})]), AIMessageChunk(content="")],
         {"call": {"name": "now", "arguments": {}}}),
        ([AIMessageChunk(content="It is "), AIMessageChunk(content="sunny.")], {"call": None}),
        ([AIMessageChunk(content="", tool_calls=[_call("now", {}), _call("get_weather", {"city": "Oz"})])],
         {"call": [{"name": "now", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Oz"}}]}),
    ],
    ids=["a call", "plain text: no call", "two calls: not the task's shape"],
)  # fmt: skip
def test_the_answer_is_the_tasks_record(messages, record):
    chunks = list(tool_answer(_chunks(*messages)))
    assert json.loads(_text(chunks)) == record
    assert len(chunks) == len(messages) + 1  # each chunk kept (its counts), text only in the last


def test_a_call_the_client_cannot_read_is_an_answer_naming_it():
    def refused():
        yield ChatGenerationChunk(message=AIMessageChunk(content=""))
        raise OutputParserException("Function now arguments:\n\nten\n\nare not valid JSON")

    answer = _text(tool_answer(refused()))  # not JSON: an invalid answer, saying what the server sent
    assert answer.startswith(f"{MALFORMED_CALL}: Function now arguments: ten are not valid JSON")


def test_other_failures_pass_through():
    def failing():
        raise ConnectionError("down")
        yield

    with pytest.raises(ConnectionError):
        list(tool_answer(failing()))


def test_a_model_without_tools_is_refused_at_open_with_what_to_do():
    from quantgate.backends import BackendError
    from quantgate.backends.ollama._ollama import _check_tools
    from quantgate.inputs._variants import Variant

    variant = Variant(name="q4", backend="ollama", model="gemma3:270m")
    schema = ToolCallingTask.model_validate({"tools": [NOW]}).record_schema()
    with pytest.raises(
        BackendError, match=r"gemma3:270m does not support tools .*capabilities: completion\)"
    ):
        _check_tools(variant, schema, {"capabilities": ["completion"]})
    _check_tools(variant, schema, {"capabilities": ["completion", "tools"]})
    _check_tools(variant, schema, {})  # an older server that does not say: the calls will tell
    _check_tools(variant, {"type": "object", "properties": {"a": {"type": "string"}}}, {"capabilities": []})


@pytest.mark.parametrize(
    ("task", "tools", "many"),
    [
        ({"tools": [NOW, WEATHER]}, [NOW, WEATHER], False),
        ({"tools": [NOW, WEATHER], "calls": "many"}, [NOW, WEATHER], True),
        ({"tools": []}, [], False),
        ({"tools": [], "calls": "many"}, [], True),
    ],
    ids=["one call", "several calls", "cases bring their tools", "several calls, cases' tools"],
)
def test_every_tool_calling_task_goes_natively_with_no_grammar(task, tools, many):
    """A task of several calls, or whose cases bring their own tools, goes with `tools` as a one-call
    task does: no `format`, the record read back in the task's shape, `runtime.decoding` saying so."""
    from langchain_ollama import ChatOllama

    from quantgate.backends.ollama._ollama import _chat_model, _decoding, _Settings
    from quantgate.backends.ollama._ollama_tools import TOOLS_DECODING
    from quantgate.inputs._variants import Variant

    schema = ToolCallingTask.model_validate(task).record_schema()
    variant = Variant(name="q4", backend="ollama", model="gemma3:270m")
    chat = _chat_model(variant, schema, _Settings.of(variant), 2048)
    inner = chat.inner
    assert isinstance(inner, ChatOllama)
    assert (inner.format, chat.tools, chat.many_calls) == (None, tools, many)
    assert _decoding(schema) == {"decoding": TOOLS_DECODING, "unenforced_schema_keywords": None}
    calls = [AIMessageChunk(content="", tool_calls=[_call("now", {}), _call("get_weather", {"city": "Oz"})])]
    shaped = [{"name": "now", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Oz"}}]
    assert json.loads(_text(tool_answer(_chunks(*calls), many=chat.many_calls))) == (
        {"calls": shaped} if many else {"call": shaped}
    )
