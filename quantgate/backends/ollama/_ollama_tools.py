"""Tool calling through Ollama's own `tools` (for a `tool_calling` task's Ollama variants).

The request and answer shapes are those of Ollama's `/api/chat` as the `ollama` Python client
(0.6.3, `ollama/_types.py`) types them: `ChatRequest.tools` is a list of
`{"type": "function", "function": {"name", "description", "parameters"}}` (the OpenAI function
format a task.json holds), and the answer's `Message.tool_calls` a list of
`{"function": {"name": str, "arguments": Mapping[str, Any]}}`, or none with plain `content`
when the model calls no tool. langchain-ollama passes `tools` through (`ChatOllama._chat_params`)
and reads `tool_calls` into `AIMessageChunk.tool_calls`.

`format` is not sent with `tools`: Ollama does not constrain a tool call by a grammar. The model
writes the call in its own chat template's syntax and the server parses it out of the text, so
the call is decoded freely, unlike the embedded backend's grammar restricted to a declared tool
and its parameters. The answer is read back into the task's record shape, so the same scorer
and the same record schema judge it:

- one tool call: `{"call": {"name": ..., "arguments": {...}}}` (an undeclared tool or arguments
  its parameters refuse then fail the record schema: an invalid answer, as any other);
- no tool call (plain content): `{"call": null}`;
- several tool calls: `{"call": [...]}`, which the schema refuses (the task asks for one);
- a tool call the client cannot read (arguments that are not an object): the answer is a text
  saying so, which is not JSON: an invalid answer naming what the server sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk
from pydantic import ValidationError

__all__ = ["MALFORMED_CALL", "TOOLS_DECODING", "is_malformed_call", "task_tools", "tool_answer"]

TOOLS_DECODING = "Ollama tools: the model's own tool-call template, parsed by the server; no grammar"
"""How an Ollama variant's calls are decoded for a tool-calling task (`runtime.decoding`)."""
MALFORMED_CALL = "the server's tool call is not readable"
"""The start of the answer recorded for a tool call the client could not read."""


def task_tools(schema: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The tools of a tool-calling task's record schema (`ToolCallingTask.record_schema`), in the
    OpenAI function format; None for any other schema."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or set(properties) != {"call"}:
        return None
    branches = properties["call"].get("anyOf") if isinstance(properties["call"], Mapping) else None
    if not isinstance(branches, list) or {"type": "null"} not in branches:
        return None
    tools = []
    for branch in branches:
        if branch == {"type": "null"}:
            continue
        fields = branch.get("properties", {})
        name = fields.get("name", {}).get("const") if isinstance(fields, Mapping) else None
        if not isinstance(name, str) or "arguments" not in fields:
            return None
        function = {
            "name": name,
            "description": branch.get("description", ""),
            "parameters": fields["arguments"],
        }
        tools.append({"type": "function", "function": function})
    return tools or None


def is_malformed_call(exc: BaseException) -> bool:
    """A tool call the client refused: arguments that are not an object (the `ollama` client's
    model refuses them; langchain-ollama refuses arguments it cannot parse)."""
    return isinstance(exc, OutputParserException | ValidationError)


def _record(calls: list[dict[str, Any]]) -> dict[str, Any]:
    shaped = [{"name": call["name"], "arguments": call["args"]} for call in calls]
    if not shaped:
        return {"call": None}
    return {"call": shaped[0] if len(shaped) == 1 else shaped}


def tool_answer(chunks: Iterator[ChatGenerationChunk]) -> Iterator[ChatGenerationChunk]:
    """The chunks of a call made with `tools`, their text replaced by the task's record: every
    chunk passes with no text (its timing and counts kept), then one chunk carries the record."""
    calls: list[dict[str, Any]] = []
    try:
        for chunk in chunks:
            message = chunk.message
            if isinstance(message, AIMessageChunk):
                calls += [dict(call) for call in message.tool_calls]
                message = message.model_copy(update={"content": "", "tool_calls": [], "tool_call_chunks": []})
            else:
                message = message.model_copy(update={"content": ""})
            yield ChatGenerationChunk(message=message, generation_info=chunk.generation_info)
    except Exception as exc:
        if not is_malformed_call(exc):
            raise
        what = " ".join(str(exc).split())[:300]
        yield ChatGenerationChunk(message=AIMessageChunk(content=f"{MALFORMED_CALL}: {what}"))
        return
    yield ChatGenerationChunk(message=AIMessageChunk(content=json.dumps(_record(calls))))
