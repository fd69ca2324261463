"""A dataset's `task.json`: which kind of task its cases are (docs/tasks.md), and what follows
from it for the dataset: the record schema (schema.json for extraction, derived from the task
for the other kinds) and the checks on every case's and example's `expected`.

Without task.json a dataset is an extraction dataset, as before task kinds existed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from jsonschema.exceptions import SchemaError
from pydantic import ValidationError

from evaluators import (
    FieldSpec,
    FormatEvaluator,
    FormatProblem,
    SchemaSupportError,
    check_schema,
    error_path,
    loads_json,
    parse_schema,
)
from evaluators.tasks import (
    TASK_KINDS,
    ExtractionTask,
    Task,
    check_expected,
    field_spec,
    gold_in_record_shape,
    parse_task,
)
from quantgate.inputs._problems import Problem, validation_problems
from quantgate.inputs._schema_refs import SchemaRefError, inline_refs
from quantgate.inputs._utf8 import utf8_encodable

__all__ = [
    "TASK_FILE",
    "ExpectedCheck",
    "RecordSchema",
    "derived_schema",
    "inlined_tools",
    "read_record_schema",
    "read_task",
    "task_json",
]

TASK_FILE = "task.json"
_SCHEMA_FILE = "schema.json"


@dataclass(frozen=True, kw_only=True)
class RecordSchema:
    """What a dataset's records look like: its task, the record schema and its field tree."""

    task: Task
    schema: dict[str, Any]
    spec: FieldSpec


def _encodable(value: Any, file: str, problems: list[Problem]) -> bool:
    """Whether `value` (read from `file`) can be written back as UTF-8; if not, a problem says why."""
    try:
        utf8_encodable(value)
    except ValueError as exc:
        problems.append(Problem(file=file, message=str(exc)))
        return False
    return True


def read_task(root: Path, problems: list[Problem]) -> Task | None:
    """The task of the dataset in `root`: its task.json, or extraction without one.

    Returns:
        The task; None when task.json has errors (each added to `problems`).
    """
    file = root / TASK_FILE
    if not file.is_file():
        return ExtractionTask()
    try:
        raw = loads_json(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:  # a JSONDecodeError is a ValueError
        problems.append(Problem(file=TASK_FILE, message=f"not valid JSON: {exc}"))
        return None
    if not _encodable(raw, TASK_FILE, problems):
        return None
    if not isinstance(raw, dict):
        example = '{"kind": "classification", "labels": [...]}'
        problems.append(Problem(file=TASK_FILE, message=f"must be a JSON object such as {example}"))
        return None
    kinds = ", ".join(TASK_KINDS)
    kind = raw.get("kind")
    if not isinstance(kind, str) or kind not in TASK_KINDS:
        message = "missing" if "kind" not in raw else f"{kind!r} is not a task kind"
        problems.append(Problem(file=TASK_FILE, field="kind", message=f"{message} (one of {kinds})"))
        return None
    raw = _tools_inlined(raw, problems)
    if raw is None:
        return None
    try:
        return parse_task(raw)
    except ValidationError as exc:
        for problem in validation_problems(exc, file=TASK_FILE, line=None):
            # pydantic puts the union's tag first in each location: `classification.labels`
            field = (problem.field or "").removeprefix(str(kind)).lstrip(".") or None
            problems.append(Problem(file=TASK_FILE, field=field, message=problem.message))
        return None


def _tools_inlined(raw: dict[str, Any], problems: list[Problem]) -> dict[str, Any] | None:
    """task.json with each tool's parameters' local `$ref`s inlined (`inlined_tools`); None when
    one cannot be, each such problem added."""
    tools = raw.get("tools")
    if not isinstance(tools, list):
        return raw
    inlined = inlined_tools(tools, file=TASK_FILE, line=None, problems=problems)
    return None if inlined is None else {**raw, "tools": inlined}


def inlined_tools(
    tools: list[Any], *, file: str, line: int | None, problems: list[Problem]
) -> list[Any] | None:
    """A `tools` list (task.json's, or a case line's) with each tool's parameters' local `$ref`s
    inlined (`schema_refs`: they would point elsewhere inside the record schema); None when one
    cannot be, each such problem added, located by `file` and `line`. Entries that are not a tool
    with parameters are kept as they are: the `Tool` model names what is wrong with them."""
    inlined: list[Any] = []
    refused = False
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("parameters"), dict):
            inlined.append(tool)
            continue
        try:
            function = {**function, "parameters": inline_refs(function["parameters"])}
        except SchemaRefError as exc:
            field = ".".join(filter(None, (f"tools[{index}].function.parameters", exc.path)))
            problems.append(Problem(file=file, line=line, field=field, message=exc.message))
            refused = True
        inlined.append({**tool, "function": function})
    return None if refused else inlined


def read_record_schema(root: Path, problems: list[Problem]) -> RecordSchema | None:
    """The dataset's task and record schema: schema.json for extraction, else derived from task.json."""
    task = read_task(root, problems)
    if task is None:
        return None
    derived = derived_schema(root, task, problems)
    if derived is not None:
        return derived
    parsed = _read_schema(root, problems)
    return None if parsed is None else RecordSchema(task=task, schema=parsed[0], spec=parsed[1])


def _read_schema(path: Path, problems: list[Problem]) -> tuple[dict[str, Any], FieldSpec] | None:
    file = path / _SCHEMA_FILE
    if not file.is_file():
        problems.append(Problem(file=_SCHEMA_FILE, message="missing"))
        return None
    try:
        schema = loads_json(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        problems.append(Problem(file=_SCHEMA_FILE, message=f"not valid JSON: {exc}"))
        return None
    if not isinstance(schema, dict):
        problems.append(Problem(file=_SCHEMA_FILE, message="the schema must be a JSON object"))
        return None
    if not _encodable(schema, _SCHEMA_FILE, problems):
        return None
    try:
        check_schema(schema)  # nesting bounded, patterns in RE2 syntax, then the metaschema
    except SchemaError as exc:
        field = error_path(exc.absolute_path)
        problems.append(
            Problem(file=_SCHEMA_FILE, field=field, message=f"not a valid JSON Schema: {exc.message}")
        )
        return None
    try:
        return schema, parse_schema(schema)
    except SchemaSupportError as exc:
        problems.append(Problem(file=_SCHEMA_FILE, field=exc.path or "<root>", message=exc.message))
        return None


def derived_schema(root: Path, task: Task, problems: list[Problem]) -> RecordSchema | None:
    """The record schema of a kind that derives it from task.json (None for extraction, whose
    record schema is schema.json). A schema.json beside it is an error: it would not be used."""
    schema = task.record_schema()
    if schema is None:
        return None
    if (root / _SCHEMA_FILE).is_file():
        problems.append(
            Problem(
                file=_SCHEMA_FILE,
                message=f"not used by a {task.kind} task: its record schema is derived from task.json "
                "(docs/tasks.md); remove schema.json",
            )
        )
    return RecordSchema(task=task, schema=schema, spec=field_spec(task, schema))


@dataclass(frozen=True, kw_only=True)
class ExpectedCheck:
    """Checks a case's `expected` against its task: first what task.json allows (a label outside
    the set, an unknown tool, arguments its parameters refuse), then the record schema."""

    task: Task
    schema: Mapping[str, Any]

    @cached_property
    def _format(self) -> FormatEvaluator:
        return FormatEvaluator(schema=self.schema)

    def __call__(self, expected: Mapping[str, Any]) -> list[FormatProblem]:
        """Every problem of `expected`, located from it (`expected.label`)."""
        problems = check_expected(self.task, expected)
        if problems or not gold_in_record_shape(self.task, expected):
            return problems
        return self._format.schema_errors(expected, prefix="expected")


def task_json(task: Task) -> str:
    """The text of task.json for a task."""
    return json.dumps(task.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
