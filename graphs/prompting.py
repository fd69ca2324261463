"""The prompt: the task's instruction, few-shot examples, the case text.

Each task kind (`evaluators.kinds`) has its instruction (`TaskKind.instruction`): extraction
lists the schema's fields with their descriptions, classification the labels, tool calling the
tools, generation asks for the text. The answer is one JSON object of the
kind's record schema, with one exception: a tool-calling task whose backend sends the tools through
its API's own `tools` (`native_tools`, as Ollama's `/api/chat` does) is asked, as Ollama's and
OpenAI's tool-calling conventions expect, to call one of the tools or to answer without a call when
none fits; its few-shot examples are then assistant messages with `tool_calls` (and plain answers
for the examples without a call), and its repairs answer the call with a tool message. The tools
themselves are not listed in that prompt: the model's chat template renders the `tools` it is sent.

The prompt is built as chat messages; each backend renders them its own way (the embedded
base model as a plain completion, Ollama through the model's chat template). Everything
before the case text is identical across cases, so backends that cache a prompt prefix
evaluate it once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.tool import ToolCall, tool_call

from evaluators.kinds import instructions, kind_of
from evaluators.tasks import ExtractionTask, Task, Tool

__all__ = [
    "NATIVE_TOOL_INSTRUCTION",
    "NO_TOOL_ANSWER",
    "REPAIR_NAME",
    "build_messages",
    "instructions",
    "native_tool_prompt",
    "native_tools_text",
    "prompt_text",
    "repair_message",
    "repair_turn",
    "task_instructions",
]

NATIVE_TOOL_INSTRUCTION = (
    "Call the tool that does what the text asks, with its arguments. When none of the tools fits, "
    "answer without calling a tool."
)
"""The system text of a tool-calling task whose tools go natively (the tools come as `tools`)."""
NO_TOOL_ANSWER = "None of the tools fits this request."
"""The assistant's answer, without a tool call, in a native few-shot example whose gold is no call."""


def _native_calls(call: Any, prefix: str) -> list[ToolCall] | None:
    """A record's `call` as LangChain tool calls (ids `prefix-N`); None for no call, or for a call
    that is not a named tool with an object of arguments (it cannot be sent as a tool call)."""
    calls = call if isinstance(call, list) else [call]
    if call is None or not all(
        isinstance(c, Mapping) and isinstance(c.get("name"), str) and isinstance(c.get("arguments"), Mapping)
        for c in calls
    ):
        return None
    return [
        tool_call(name=c["name"], args=dict(c["arguments"]), id=f"{prefix}-{i}") for i, c in enumerate(calls)
    ]


def _record_calls(record: Mapping[str, Any] | None) -> Any:
    """A record's `call`, or its `calls` (a task of several calls)."""
    record = record or {}
    return record.get("calls") if "calls" in record else record.get("call")


def _native_answer(record: Mapping[str, Any], prefix: str) -> AIMessage:
    """An example's gold record as the assistant's turn: its calls as `tool_calls`, or no call."""
    calls = _native_calls(_record_calls(record), prefix)
    return AIMessage(content="", tool_calls=calls) if calls else AIMessage(content=NO_TOOL_ANSWER)


def _native_tools(task: Task | None, native_tools: bool) -> tuple[Tool, ...]:
    """The tools that go natively: those the task offers to call (`TaskModel.offered_tools`, tool
    calling's) when its backend sends them through its API's `tools`; empty otherwise."""
    return task.offered_tools if native_tools and task is not None else ()


def native_tool_prompt(task: Task | None, native_tools: bool) -> bool:
    """Whether the prompt is the native tool-calling one: the task's tools go natively."""
    return bool(_native_tools(task, native_tools))


def native_tools_text(task: Task | None, native_tools: bool) -> str:
    """The tools as JSON text when they go natively, to count the tokens the chat template adds
    for them (near enough: templates wrap them in a few words of their own); "" otherwise."""
    tools = _native_tools(task, native_tools)
    return json.dumps([tool.model_dump() for tool in tools], ensure_ascii=False) if tools else ""


def prompt_text(message: BaseMessage) -> str:
    """A message's text as a prompt holds it, to count its tokens: its content, and its tool calls
    as JSON (a chat template renders them)."""
    calls = getattr(message, "tool_calls", None) or []
    shown = json.dumps([{"name": c["name"], "arguments": c["args"]} for c in calls], ensure_ascii=False)
    return str(message.content) + (shown if calls else "")


def task_instructions(task: Task, schema: Mapping[str, Any]) -> str:
    """The system text for a task: its kind's instruction (`evaluators.kinds`).

    Raises:
        ValueError: The kind has no instruction.
    """
    instruction = kind_of(task).instruction
    if instruction is None:
        raise ValueError(f"the {task.kind} task kind has no prompt instruction")
    return instruction(task, schema)


REPAIR_NAME = "validator"
"""`name` of the message that feeds validation errors back (backends may render it apart)."""


def repair_message(errors: Sequence[str]) -> HumanMessage:
    """The follow-up that tells the model what was wrong with its JSON."""
    listed = "; ".join(errors[:5]) or "unknown error"
    return HumanMessage(
        content=f"The JSON is invalid: {listed}. Write the whole JSON object again, corrected.",
        name=REPAIR_NAME,
    )


def repair_turn(
    *, raw: str, record: Mapping[str, Any] | None, errors: Sequence[str], native_tools: bool = False
) -> list[BaseMessage]:
    """The messages a repair appends: the model's answer, then what was wrong with it.

    With tools sent natively (`native_tools`), an answer that was a tool call goes back as that
    call, answered by one tool message per call naming the errors, as a tool's result would be;
    any other answer (a call the server could not read) by a user message. Otherwise the answer's
    JSON text and `repair_message`.
    """
    if not native_tools:
        return [AIMessage(content=raw), repair_message(errors)]
    listed = "; ".join(errors[:5]) or "unknown error"
    again = "Call one of the tools again, corrected, or answer without a tool call when none fits."
    calls = _native_calls(_record_calls(record), "repair")
    if not calls:
        feedback = HumanMessage(content=f"The answer is invalid: {listed}. {again}", name=REPAIR_NAME)
        return [AIMessage(content=raw), feedback]
    answer = f"The tool call is invalid: {listed}. {again}"
    return [
        AIMessage(content="", tool_calls=calls),
        *(ToolMessage(content=answer, tool_call_id=str(c["id"])) for c in calls),
    ]


def build_messages(
    *,
    schema: Mapping[str, Any],
    examples: Sequence[tuple[str, Mapping[str, Any]]],
    text: str,
    task: Task | None = None,
    native_tools: bool = False,
) -> list[BaseMessage]:
    """System instructions (the task's; extraction without one), then each example as a
    human/AI pair, then the case text.

    `native_tools`: the backend sends a tool-calling task's tools through its API's `tools`; the
    prompt then asks for a tool call (`NATIVE_TOOL_INSTRUCTION`) and shows each example's call as
    the assistant's `tool_calls` (see the module docstring). Other kinds ignore it.
    """
    native = native_tool_prompt(task, native_tools)
    system = NATIVE_TOOL_INSTRUCTION if native else task_instructions(task or ExtractionTask(), schema)
    messages: list[BaseMessage] = [SystemMessage(content=system)]
    for number, (example_text, record) in enumerate(examples, start=1):
        messages.append(HumanMessage(content=example_text))
        if native:
            messages.append(_native_answer(record, f"example-{number}"))
        else:
            messages.append(AIMessage(content=json.dumps(record, ensure_ascii=False)))
    messages.append(HumanMessage(content=text))
    return messages
