"""A tool-calling task through a model API's own `tools` (Ollama's `/api/chat`, an OpenAI-compatible
server's Chat Completions), shared by the backends that send tools natively.

The tools are read from the task's record schema (`ToolCallingTask.record_schema`), in the OpenAI
function format a task.json holds: `{"type": "function", "function": {"name", "description",
"parameters"}}`. The server parses the model's tool calls out of its text; the calls are read back
into the task's record shape, so the same scorer and the same record schema judge them:

- one tool call: `{"call": {"name": ..., "arguments": {...}}}` (an undeclared tool or arguments its
  parameters refuse then fail the record schema: an invalid answer, as any other);
- no tool call (plain content): `{"call": null}`;
- several tool calls: `{"call": [...]}`, which the schema refuses (the task asks for one);
- with `"calls": "many"` (BFCL's parallel categories), `{"calls": [...]}` whatever their number,
  `{"calls": []}` for none;
- a tool call the client cannot read (arguments that are not JSON, or not an object): the answer is
  a text saying so, which is not JSON: an invalid answer naming what the server sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk
from pydantic import ValidationError

__all__ = [
    "MALFORMED_CALL",
    "NativeTools",
    "is_malformed_call",
    "native_tools_of",
    "task_tools",
    "tool_answer",
]

MALFORMED_CALL = "the server's tool call is not readable"
"""The start of the answer recorded for a tool call the client could not read."""


@dataclass(frozen=True, kw_only=True)
class NativeTools:
    """A tool-calling task's tools as a model API's `tools` take them.

    Attributes:
        tools: The tools in the OpenAI function format (empty when the cases bring their own).
        many: The record holds several calls (`{"calls": [...]}`), not one (`{"call": ...}`).
    """

    tools: list[dict[str, Any]]
    many: bool


def _tool(branch: Any) -> dict[str, Any] | None:
    """One branch of the record schema's calls as a tool; None when it is not a named call."""
    fields = branch.get("properties") if isinstance(branch, Mapping) else None
    if not isinstance(fields, Mapping) or "arguments" not in fields:
        return None
    name = fields.get("name", {}).get("const")
    if not isinstance(name, str):
        return None
    function = {"name": name, "description": branch.get("description", ""), "parameters": fields["arguments"]}
    return {"type": "function", "function": function}


def native_tools_of(schema: Mapping[str, Any]) -> NativeTools | None:
    """The tools of a tool-calling task's record schema, one call or several; None for any other
    schema."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or set(properties) not in ({"call"}, {"calls"}):
        return None
    many = "calls" in properties
    calls = properties["calls" if many else "call"]
    if many:
        calls = calls.get("items") if isinstance(calls, Mapping) and calls.get("type") == "array" else None
    branches = calls.get("anyOf") if isinstance(calls, Mapping) else None
    if not isinstance(branches, list) or (not many and {"type": "null"} not in branches):
        return None
    tools = [_tool(branch) for branch in branches if branch != {"type": "null"}]
    if any(tool is None for tool in tools):
        return None
    return NativeTools(tools=[tool for tool in tools if tool is not None], many=many)


def task_tools(schema: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The tools of a one-call tool-calling task's record schema, in the OpenAI function format;
    None for any other schema, for a task of several calls and for a task with no tools of its own."""
    native = native_tools_of(schema)
    return native.tools if native is not None and not native.many and native.tools else None


def is_malformed_call(exc: BaseException) -> bool:
    """A tool call the client refused: arguments that are not an object (the `ollama` client's model
    and LangChain's `AIMessage` refuse them; langchain-ollama refuses arguments it cannot parse)."""
    return isinstance(exc, OutputParserException | ValidationError)


def _record(calls: list[dict[str, Any]], many: bool) -> dict[str, Any]:
    shaped = [{"name": call["name"], "arguments": call["args"]} for call in calls]
    if many:
        return {"calls": shaped}
    if not shaped:
        return {"call": None}
    return {"call": shaped[0] if len(shaped) == 1 else shaped}


def _unreadable(message: AIMessageChunk) -> str | None:
    """What is wrong with a tool call the client could not read: LangChain's `invalid_tool_calls`
    (langchain-openai's arguments that are not JSON; arguments that are JSON but not an object are
    refused by the message's model instead, a `ValidationError`)."""
    bad = next(iter(message.invalid_tool_calls), None)
    return (
        None if bad is None else f"{bad.get('error')} (tool {bad.get('name')}, arguments {bad.get('args')!r})"
    )


def _malformed(what: str) -> ChatGenerationChunk:
    return ChatGenerationChunk(
        message=AIMessageChunk(content=f"{MALFORMED_CALL}: {' '.join(what.split())[:300]}")
    )


def tool_answer(
    chunks: Iterator[ChatGenerationChunk], *, many: bool = False
) -> Iterator[ChatGenerationChunk]:
    """The chunks of a call made with `tools`, their text replaced by the task's record: every
    chunk passes with no text (its timing and counts kept), then one chunk carries the record
    (`{"calls": [...]}` when `many`), or the text of a malformed call."""
    calls: list[dict[str, Any]] = []
    unreadable: str | None = None
    try:
        for chunk in chunks:
            message = chunk.message
            if isinstance(message, AIMessageChunk):
                unreadable = unreadable or _unreadable(message)
                calls += [dict(call) for call in message.tool_calls]
                blank = {"content": "", "tool_calls": [], "tool_call_chunks": [], "invalid_tool_calls": []}
                message = message.model_copy(update=blank)
            else:
                message = message.model_copy(update={"content": ""})
            yield ChatGenerationChunk(message=message, generation_info=chunk.generation_info)
    except Exception as exc:
        if not is_malformed_call(exc):
            raise
        yield _malformed(str(exc))
        return
    if unreadable is not None:
        yield _malformed(unreadable)
        return
    yield ChatGenerationChunk(message=AIMessageChunk(content=json.dumps(_record(calls, many))))
