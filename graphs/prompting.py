"""The extraction prompt: instructions from the schema's field descriptions, few-shot examples.

The prompt is built as chat messages; each backend renders them its own way (the embedded
base model as a plain completion, Ollama through the model's chat template). Everything
before the case text is identical across cases, so backends that cache a prompt prefix
evaluate it once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from evaluators.schema import FieldSpec, parse_schema

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
) -> list[BaseMessage]:
    """System instructions, then each example as a human/AI pair, then the case text."""
    messages: list[BaseMessage] = [SystemMessage(content=instructions(schema))]
    for example_text, record in examples:
        messages.append(HumanMessage(content=example_text))
        messages.append(AIMessage(content=json.dumps(record, ensure_ascii=False)))
    messages.append(HumanMessage(content=text))
    return messages
