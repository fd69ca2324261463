"""The prompt: the task's instruction, few-shot examples, the case text.

Each task kind (`evaluators.tasks.TASK_KINDS`) has its instruction in `TASK_INSTRUCTIONS`:
extraction lists the schema's fields with their descriptions, classification the labels,
tool calling the tools, generation asks for the text. The answer is always one JSON object
of the kind's record schema.

The prompt is built as chat messages; each backend renders them its own way (the embedded
base model as a plain completion, Ollama through the model's chat template). Everything
before the case text is identical across cases, so backends that cache a prompt prefix
evaluate it once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from evaluators.schema import FieldSpec, parse_schema
from evaluators.tasks import ClassificationTask, ExtractionTask, GenerationTask, Task, ToolCallingTask

_KIND_HINTS = {
    "number": "a number",
    "integer": "an integer",
    "boolean": "true or false",
    "date": "a date as YYYY-MM-DD",
    "string": "text",
    "scalar_array": "a list",
    "object_array": "a list of objects",
    "object": "an object",
}


def _describe(spec: FieldSpec, depth: int = 0) -> list[str]:
    lines = []
    for child in spec.children:
        hint = _KIND_HINTS.get(child.kind, "")
        if child.kind == "enum":
            hint = "one of " + ", ".join(json.dumps(v) for v in child.enum)
        nullable = ", or null" if child.nullable else ""
        description = f": {child.description}" if child.description else ""
        lines.append(f"{'  ' * depth}- {child.leaf_name} ({hint}{nullable}){description}")
        if child.kind in ("object", "object_array"):
            lines.extend(_describe(child, depth + 1))
    return lines


def instructions(schema: Mapping[str, Any]) -> str:
    """The system text: the task and every field with its description."""
    spec = parse_schema(schema)
    title = schema.get("title") or "record"
    header = (
        f"Extract a {title} from the text as one JSON object with these fields. "
        "Use null (or [] for lists) when the text does not give a value; copy values as written "
        "unless the field says how to convert them."
    )
    return "\n".join([header, *_describe(spec)])


def _classification(task: ClassificationTask, schema: Mapping[str, Any]) -> str:
    labels = [f"- {label}" for label in task.labels]
    if task.multi_label:
        return "\n".join(
            [
                "Classify the text with every label that applies, from these labels:",
                *labels,
                'Answer with one JSON object: {"labels": [the labels that apply]}, or {"labels": []} '
                "when none applies.",
            ]
        )
    return "\n".join(
        [
            "Classify the text into one of these labels:",
            *labels,
            'Answer with one JSON object: {"label": "the label"}.',
        ]
    )


def _tool_calling(task: ToolCallingTask, schema: Mapping[str, Any]) -> str:
    lines = ["Call the tool that does what the text asks, with its arguments, choosing from these tools:"]
    for tool in task.tools:
        function = tool.function
        description = f": {function.description}" if function.description else ""
        parameters = json.dumps(function.parameters, ensure_ascii=False)
        lines.append(f"- {function.name}{description}\n  parameters: {parameters}")
    lines.append(
        'Answer with one JSON object: {"call": {"name": "the tool\'s name", "arguments": {its parameters}}}, '
        'or {"call": null} when no tool fits.'
    )
    return "\n".join(lines)


def _generation(task: GenerationTask, schema: Mapping[str, Any]) -> str:
    instruction = task.instruction or "Write the text that the input asks for."
    return f'{instruction} Answer with one JSON object: {{"text": "the text"}}.'


TASK_INSTRUCTIONS: dict[str, Callable[[Any, Mapping[str, Any]], str]] = {
    "extraction": lambda task, schema: instructions(schema),
    "classification": _classification,
    "tool_calling": _tool_calling,
    "generation": _generation,
}
"""The system text of each task kind, from its task and record schema (one per `TASK_KINDS` entry)."""


def task_instructions(task: Task, schema: Mapping[str, Any]) -> str:
    """The system text for a task: its kind's instruction."""
    return TASK_INSTRUCTIONS[task.kind](task, schema)


REPAIR_NAME = "validator"
"""`name` of the message that feeds validation errors back (backends may render it apart)."""


def repair_message(errors: Sequence[str]) -> HumanMessage:
    """The follow-up that tells the model what was wrong with its JSON."""
    listed = "; ".join(errors[:5]) or "unknown error"
    return HumanMessage(
        content=f"The JSON is invalid: {listed}. Write the whole JSON object again, corrected.",
        name=REPAIR_NAME,
    )


def build_messages(
    *,
    schema: Mapping[str, Any],
    examples: Sequence[tuple[str, Mapping[str, Any]]],
    text: str,
    task: Task | None = None,
) -> list[BaseMessage]:
    """System instructions (the task's; extraction without one), then each example as a
    human/AI pair, then the case text."""
    system = task_instructions(task or ExtractionTask(), schema)
    messages: list[BaseMessage] = [SystemMessage(content=system)]
    for example_text, record in examples:
        messages.append(HumanMessage(content=example_text))
        messages.append(AIMessage(content=json.dumps(record, ensure_ascii=False)))
    messages.append(HumanMessage(content=text))
    return messages
