"""Native tools on an `openai:` variant (the `native_tools` option, off by default).

By default a tool-calling task goes to an OpenAI-compatible server as any other task: the record
schema as `response_format`, a grammar where the server takes one. With `native_tools = true` the
case's tools go as the Chat Completions request's own `tools` (the OpenAI function format a task.json
holds; a case's own tools for a case that brings them) with `tool_choice: "auto"`, and no
`response_format`: the model writes the call in its chat template's syntax and the server's
tool-call parser reads it (vLLM's `--tool-call-parser`, llama.cpp's `llama-server --jinja`,
llama-cpp-python's `--chat_format chatml-function-calling`). What constrains the call is the
server's own doing: llama-cpp-python's handler picks `functions.NAME:` or `message:` under a
grammar of the tool names, then the arguments under the tool's parameters as a grammar; vLLM and
llama-server decode freely and parse the text. The answer's
`choices[0].message.tool_calls` carry each call's arguments as a JSON string; LangChain's `ChatOpenAI`
parses them (unparseable ones become its `invalid_tool_calls`), and the calls are read back into the
task's record shape as Ollama's are (`quantgate.backends._native_tools`), so the same scorer judges
them.

The call is made without streaming: llama-cpp-python's `chatml-function-calling` refuses a streamed
call with `tool_choice: "auto"` once the model calls a tool ("Automatic streaming tool choice is not
supported"), and the record is known only at the end of the answer anyway (Ollama's native calls are
streamed, but their text is the record written at the end too). The first token's time is then the
whole answer's; the read timeout is `timeout_s`.

The few-shot examples' calls go as assistant messages with `tool_calls` and `content: ""`
(`tool_chat_openai`): LangChain sends `content: null` there, as the OpenAI API allows, but
llama-cpp-python's server refuses it (500, "Input should be a valid string").
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

from graphs.streamed import ModelCallError
from quantgate.backends import BackendError
from quantgate.backends._backend_options import options_of
from quantgate.backends._native_tools import NativeTools, native_tools_of
from quantgate.backends.openai._openai_options import OpenAIOptions
from quantgate.inputs._variants import Variant

__all__ = [
    "PROBE_TOOL",
    "TOOLS_DECODING",
    "native_tools_option",
    "probe_tools",
    "tool_chat_openai",
    "tool_fields",
    "tools_refused",
]

TOOLS_DECODING = (
    "OpenAI tools: tools with tool_choice auto, the call parsed by the server's tool-call parser; "
    "no response_format or grammar sent"
)
"""How an `openai:` variant's calls are decoded with `native_tools` (`runtime.decoding`)."""

_PARSERS = (
    "vLLM: --enable-auto-tool-choice --tool-call-parser NAME; llama.cpp's llama-server: --jinja; "
    "llama-cpp-python: --chat_format chatml-function-calling"
)


def native_tools_option(variant: Variant, schema: Mapping[str, Any], api: str) -> NativeTools | None:
    """The task's tools when the variant sends them natively (`native_tools = true`); None when it
    does not.

    Raises:
        BackendError: `native_tools` on the completions endpoint (it has no `tools`), or on a task
            that is not tool calling.
    """
    if not options_of(variant, OpenAIOptions).native_tools:
        return None
    if api == "completions":
        raise BackendError(
            f"variant {variant.name}: native_tools sends the tools as the Chat Completions request's "
            'tools, which /v1/completions has not: use api = "chat", or remove native_tools'
        )
    native = native_tools_of(schema)
    if native is None:
        raise BackendError(
            f"variant {variant.name}: native_tools is for a tool-calling task (task.json kind "
            '"tool_calling"); this dataset\'s task is not tool calling: remove native_tools'
        )
    return native


PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "probe",
        "description": "A stand-in tool for the open's probe",
        "parameters": {"type": "object", "properties": {}},
    },
}
"""The tool the open's probe offers for a record schema that offers none (its cases bring their own
tools), so that a server refusing `tools` is found at open, not at the first case."""


def probe_tools(native: NativeTools) -> NativeTools:
    """The tools of the open's one-token probe: the task's, or `PROBE_TOOL` when it offers none."""
    return native if native.tools else dataclasses.replace(native, tools=[PROBE_TOOL])


def tool_fields(native: NativeTools) -> dict[str, Any]:
    """The request's fields for the tools: `tools` with `tool_choice: "auto"`; none for a case that
    is offered no tool (`"tools": []` in the OpenAI API is refused; its answer reads as no call)."""
    return {"tools": native.tools, "tool_choice": "auto"} if native.tools else {}


def tools_refused(variant: Variant, base_url: str, refused: ModelCallError) -> BackendError:
    """The open's error for a server that refused the one-call probe with `tools`."""
    return BackendError(
        f"variant {variant.name}: {base_url} refused a call with tools ({refused}); native_tools needs "
        f"a server that parses tool calls ({_PARSERS}), or remove native_tools"
    )


@functools.cache
def tool_chat_openai() -> type[Any]:
    """`ChatOpenAI` whose assistant messages with tool calls carry `content: ""` instead of LangChain's
    `null` (see the module), which every server takes."""
    from langchain_openai import ChatOpenAI

    class ToolChatOpenAI(ChatOpenAI):
        def _get_request_payload(
            self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any
        ) -> dict[str, Any]:
            payload = super()._get_request_payload(input_, stop=stop, **kwargs)
            for message in payload.get("messages", []):
                if message.get("tool_calls") and message.get("content") is None:
                    message["content"] = ""
            return payload

    return ToolChatOpenAI
