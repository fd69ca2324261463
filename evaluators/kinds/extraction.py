"""The extraction kind: a record whose schema is the dataset's schema.json (the kind without
task.json). Its figures are the summary table's own columns, so it has no figure section."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evaluators.kinds.kind import TaskKind, score_by_field
from evaluators.schema import FieldSpec, parse_schema
from evaluators.task_models import ExtractionTask, parse_task

__all__ = ["EXTRACTION", "instructions"]

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


EXTRACTION = TaskKind(
    model=ExtractionTask,
    score=score_by_field,
    parse=parse_task,
    instruction=lambda task, schema: instructions(schema),
    keeps_values=False,  # its figures read no field's values
    opener="open_extractor",
)
"""Extraction: scored field by field; outcomes keep no values (its figures do not read them)."""
