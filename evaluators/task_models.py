"""The task models: what a dataset's `task.json` declares (docs/tasks.md), one pydantic model per
kind, told apart by `kind`, each deriving its record schema (`record_schema()`; None for
extraction, whose record schema is the dataset's schema.json).

What each kind does beyond its declaration (scoring, gold checks, prompt, figures) is its kind
object in `evaluators.kinds`; a scorer module needs only these models (`evaluators.kinds` imports
the scorers).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Self

from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ConfigDict, Field, StrictBool, TypeAdapter, field_validator

from evaluators.format import error_path
from evaluators.validation import check_schema

__all__ = [
    "MAX_LABELS",
    "ClassificationTask",
    "ExtractionTask",
    "GenerationTask",
    "LabelSet",
    "Task",
    "TaskModel",
    "Tool",
    "ToolCallingTask",
    "ToolFunction",
    "parse_task",
    "tool_set_key",
    "unique_tools",
]

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""OpenAI's rule for a function name."""

MAX_LABELS = 500
"""The most labels a classification task may have. Every case's prompt lists every label (and the
grammar holds each): banking77's 77 labels take about 1,800 characters of it, some 500 tokens, so
500 labels of that length take about 3,000 tokens of the 8,192-token context the embedded backend
opens, leaving the rest for the instructions, the examples and the case's text and answer. Far
more leave no room for a case (with 100,000 labels, a run recorded nothing for minutes)."""


@dataclass(frozen=True)
class LabelSet:
    """A closed set of labels a task's records pick from: `field` holds one of `labels`, or a list
    of them when `multi_label`."""

    field: str
    labels: tuple[str, ...]
    multi_label: bool = False


class TaskModel(BaseModel):
    """The base of every task model: frozen, unknown keys refused.

    Its properties are what shared code asks of a task instead of its kind: a kind's model
    overrides those that hold for it (a closed label set, tools offered to call).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    @property
    def label_set(self) -> LabelSet | None:
        """The closed label set its records pick from (classification's labels); None: none."""
        return None

    @property
    def single_label_set(self) -> LabelSet | None:
        """Its label set when each case's record holds exactly one label of it (what a confusion
        matrix and a gold label's probability need); None: no label set, or several per case."""
        labels = self.label_set
        return labels if labels is not None and not labels.multi_label else None

    @property
    def offered_tools(self) -> tuple[Tool, ...]:
        """The tools it offers the model to call, which a backend may send natively through its
        API's `tools` (its records are then `{"call": ...}`, as tool calling's); empty: none."""
        return ()

    def for_case(self, tools: Sequence[Tool]) -> Self:
        """The task of a case that brings its own `tools` (tool calling's); the task itself when the
        case brings none.

        Raises:
            ValueError: The kind offers no tools, so a case cannot bring any.
        """
        if tools:
            raise ValueError(f"a {getattr(self, 'kind', 'task')} task offers no tools to call; remove them")
        return self

    @property
    def needs_case_tools(self) -> bool:
        """Whether each case must bring its own tools: a tool-calling task.json with `"tools": []`."""
        return False


def unique_tools(tools: Sequence[Tool]) -> tuple[Tool, ...]:
    """`tools` as a tuple, refused (ValueError) when two share a name."""
    repeated = _first_repeat(tool.function.name for tool in tools)
    if repeated is not None:
        raise ValueError(f"tool name {repeated!r} is used twice")
    return tuple(tools)


def tool_set_key(tools: Iterable[Tool]) -> str:
    """A key of a tool set (the sha256 of its JSON), the same for the same tools in the same order:
    the per-case tasks, contexts and grammars of cases with the same tools are shared under it."""
    text = json.dumps([tool.model_dump(mode="json") for tool in tools], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _first_repeat(names: Iterable[str]) -> str | None:
    """The first name seen a second time, if any."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


class ExtractionTask(TaskModel):
    """Extract a record whose schema is the dataset's schema.json (the kind without task.json)."""

    kind: Literal["extraction"] = "extraction"

    def summary(self) -> str:
        """The task in a few words, as `quantgate datasets` prints it."""
        return self.kind

    def record_schema(self) -> dict[str, Any] | None:
        """None: the record schema is the dataset's schema.json, not derived."""
        return None


class ClassificationTask(TaskModel):
    """Put the text in one of a closed set of labels (or several, with `multi_label`)."""

    kind: Literal["classification"] = "classification"
    labels: tuple[Annotated[str, Field(min_length=1)], ...]
    multi_label: StrictBool = False  # "yes" is not true

    @field_validator("labels")
    @classmethod
    def _labels_unique(cls, labels: tuple[str, ...]) -> tuple[str, ...]:
        if not labels:
            raise ValueError("at least one label is needed")
        if len(labels) > MAX_LABELS:
            raise ValueError(
                f"{len(labels):,} labels, more than {MAX_LABELS:,}: every case's prompt lists every label, "
                "and so many leave no room in the model's context for the case"
            )
        repeated = _first_repeat(labels)
        if repeated is not None:
            raise ValueError(f"label {repeated!r} is listed twice")
        return labels

    def summary(self) -> str:
        """The task in a few words: `classification, 77 labels`."""
        return f"{self.kind}, {len(self.labels)} labels{', multi-label' if self.multi_label else ''}"

    @property
    def field(self) -> str:
        """The record's one field: `label`, or `labels` for a multi-label task."""
        return "labels" if self.multi_label else "label"

    @property
    def label_set(self) -> LabelSet:
        """Its labels, in its record's one field."""
        return LabelSet(field=self.field, labels=self.labels, multi_label=self.multi_label)

    def record_schema(self) -> dict[str, Any]:
        """`{"label": <one of the labels>}`, or `{"labels": [<labels>]}` when multi-label."""
        label = {"type": "string", "enum": list(self.labels)}
        value: dict[str, Any] = (
            {"type": "array", "items": label, "description": "the labels that apply"}
            if self.multi_label
            else {**label, "description": "the label that applies"}
        )
        return _one_field_schema(self.field, value)


class ToolFunction(TaskModel):
    """A function a model may call, in the OpenAI function format."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    @field_validator("name")
    @classmethod
    def _name_format(cls, name: str) -> str:
        if not _TOOL_NAME.match(name):
            raise ValueError(f"{name!r} is not a function name (1 to 64 letters, digits, '_' or '-')")
        return name

    @field_validator("parameters")
    @classmethod
    def _object_schema(cls, parameters: dict[str, Any]) -> dict[str, Any]:
        if parameters.get("type") != "object":
            raise ValueError('must be a JSON Schema of an object ({"type": "object", "properties": ...})')
        try:
            check_schema(parameters)
        except SchemaError as exc:
            where = error_path(exc.absolute_path)
            raise ValueError(
                f"not a valid JSON Schema{f' at {where}' if where else ''}: {exc.message}"
            ) from exc
        return parameters


class Tool(TaskModel):
    """One entry of `tools`: `{"type": "function", "function": {...}}`."""

    type: Literal["function"] = "function"
    function: ToolFunction


class ToolCallingTask(TaskModel):
    """Choose a tool and its arguments for the text, or no call when no tool fits."""

    kind: Literal["tool_calling"] = "tool_calling"
    tools: tuple[Tool, ...]
    calls: Literal["one", "many"] = "one"
    """How many calls a record holds: "one" (`{"call": CALL}`, or null for no call) or "many"
    (`{"calls": [CALL, ...]}`, empty for no call), as BFCL's parallel categories ask."""

    @field_validator("tools")
    @classmethod
    def _names_unique(cls, tools: tuple[Tool, ...]) -> tuple[Tool, ...]:
        return unique_tools(tools)

    def summary(self) -> str:
        """The task in a few words: `tool_calling, 11 tools` (`, several calls` when many)."""
        return f"{self.kind}, {len(self.tools)} tools{', several calls' if self.calls == 'many' else ''}"

    @property
    def offered_tools(self) -> tuple[Tool, ...]:
        """Its tools."""
        return self.tools

    @property
    def needs_case_tools(self) -> bool:
        """Whether each case must bring its own tools: task.json offers none (`"tools": []`)."""
        return not self.tools

    def tool(self, name: str) -> ToolFunction | None:
        """The function of that name, if the task has it."""
        return next((t.function for t in self.tools if t.function.name == name), None)

    def for_case(self, tools: Sequence[Tool]) -> Self:
        """The task of a case that brings its own `tools`: task.json's tools, a case tool replacing
        the task tool of the same name, then the case's other tools (the task itself when the case
        brings none)."""
        if not tools:
            return self
        own = {tool.function.name: tool for tool in tools}
        kept = [own.pop(tool.function.name, tool) for tool in self.tools]
        return self.model_copy(update={"tools": unique_tools((*kept, *own.values()))})

    def record_schema(self) -> dict[str, Any]:
        """`{"call": null}` or `{"call": {"name": <a tool>, "arguments": <its parameters>}}`; with
        several calls, `{"calls": [<such calls>]}`."""
        branches: list[dict[str, Any]] = []
        for tool in self.tools:
            branches.append(
                {
                    "type": "object",
                    "properties": {
                        "name": {"const": tool.function.name},
                        "arguments": tool.function.parameters,
                    },
                    "required": ["name", "arguments"],
                    "additionalProperties": False,
                    "description": tool.function.description,  # an annotation: what Ollama's `tools` send
                }
            )
        if self.calls == "many":
            calls = {
                "type": "array",
                "items": {"anyOf": branches},
                "description": "the calls, none when no tool fits",
            }
            return _one_field_schema("calls", calls)
        return _one_field_schema(
            "call", {"anyOf": [{"type": "null"}, *branches], "description": "the call, or null"}
        )


class GenerationTask(TaskModel):
    """Write a text (a summary, a description from data, ...), scored against a gold text.

    Attributes:
        instruction: What to write, opening the prompt ("Write a one-sentence description of
            the restaurant from its attributes."); None: a generic instruction.
    """

    kind: Literal["generation"] = "generation"
    instruction: Annotated[str, Field(min_length=1)] | None = None

    def summary(self) -> str:
        """The task in a few words, as `quantgate datasets` prints it."""
        return self.kind

    def record_schema(self) -> dict[str, Any]:
        """`{"text": <the generated text>}`."""
        return _one_field_schema("text", {"type": "string", "description": "the text"})


Task = Annotated[
    ExtractionTask | ClassificationTask | ToolCallingTask | GenerationTask, Field(discriminator="kind")
]
"""Any task, told apart by `kind`."""

_TASK_ADAPTER: TypeAdapter[Task] = TypeAdapter(Task)


def parse_task(raw: Any) -> Task:
    """A task from its JSON value (pydantic's `ValidationError` on a bad one)."""
    return _TASK_ADAPTER.validate_python(raw)


def _one_field_schema(name: str, value: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: dict(value)},
        "required": [name],
        "additionalProperties": False,
    }
