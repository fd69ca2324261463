"""Task kinds: what a dataset asks of the model, declared in its `task.json` (docs/tasks.md).

A task is one of four pydantic models, told apart by `kind`: `ExtractionTask` (the default; the
record schema is the dataset's schema.json), `ClassificationTask`, `ToolCallingTask` and
`GenerationTask` (their record schema is derived from the task: `record_schema()`). Everything
downstream (constrained decoding, validation, prompts, scoring) works on that record schema.

`TASK_KINDS` is the one registry of what each kind does; a kind's entry names its model, how
its field tree is read, how a case's fields are scored and how a gold `expected` is checked.
The prompt instruction of each kind is in `graphs.prompting` (graphs import evaluators, not
the reverse), keyed by the same `kind`.

Plugging a case scorer into a kind (the "Adding a task kind" recipe in docs/development.md):

1. Write the scorer in its own evaluator module (`evaluators/tool_calls.py`, ...) with the
   `CaseFieldScorer` signature: keyword-only `outputs` (the model's record, already valid
   against the record schema), `reference_outputs` (the gold record, or the reference model's
   record for agreement), `task`, `spec`, `options`, `lang`; it returns a `FieldAccuracy` with
   one `FieldScore` per field of the kind (`call`, `text`, ...). Import the task model there
   only under `TYPE_CHECKING`, so this module may import yours.
2. Set `score=` in the kind's `TASK_KINDS` entry below to it (replacing `None`, "not wired").
3. Document the score in the kind's section of docs/tasks.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from evaluators.errors import UsageError
from evaluators.fields import FieldAccuracy, score_fields
from evaluators.format import FormatProblem, error_path
from evaluators.generation import score_text
from evaluators.matchers import MatchOptions
from evaluators.schema import FieldSpec, parse_schema
from evaluators.tool_calls import score_tool_call_case
from evaluators.validation import SchemaValidator, check_schema

__all__ = [
    "TASK_KINDS",
    "CaseFieldScorer",
    "ClassificationTask",
    "ExtractionTask",
    "GenerationTask",
    "Task",
    "TaskKind",
    "Tool",
    "ToolCallingTask",
    "ToolFunction",
    "case_field_scorer",
    "check_expected",
    "field_spec",
    "parse_task",
]

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""OpenAI's rule for a function name."""


class _TaskModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExtractionTask(_TaskModel):
    """Extract a record whose schema is the dataset's schema.json (the kind without task.json)."""

    kind: Literal["extraction"] = "extraction"

    def record_schema(self) -> dict[str, Any] | None:
        """None: the record schema is the dataset's schema.json, not derived."""
        return None


class ClassificationTask(_TaskModel):
    """Put the text in one of a closed set of labels (or several, with `multi_label`)."""

    kind: Literal["classification"] = "classification"
    labels: tuple[Annotated[str, Field(min_length=1)], ...]
    multi_label: bool = False

    @field_validator("labels")
    @classmethod
    def _labels_unique(cls, labels: tuple[str, ...]) -> tuple[str, ...]:
        if not labels:
            raise ValueError("at least one label is needed")
        seen: set[str] = set()
        for label in labels:
            if label in seen:
                raise ValueError(f"label {label!r} is listed twice")
            seen.add(label)
        return labels

    @property
    def field(self) -> str:
        """The record's one field: `label`, or `labels` for a multi-label task."""
        return "labels" if self.multi_label else "label"

    def record_schema(self) -> dict[str, Any]:
        """`{"label": <one of the labels>}`, or `{"labels": [<labels>]}` when multi-label."""
        label = {"type": "string", "enum": list(self.labels)}
        value: dict[str, Any] = (
            {"type": "array", "items": label, "description": "the labels that apply"}
            if self.multi_label
            else {**label, "description": "the label that applies"}
        )
        return _one_field_schema(self.field, value)


class ToolFunction(_TaskModel):
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


class Tool(_TaskModel):
    """One entry of `tools`: `{"type": "function", "function": {...}}`."""

    type: Literal["function"] = "function"
    function: ToolFunction


class ToolCallingTask(_TaskModel):
    """Choose a tool and its arguments for the text, or no call when no tool fits."""

    kind: Literal["tool_calling"] = "tool_calling"
    tools: tuple[Tool, ...]

    @field_validator("tools")
    @classmethod
    def _names_unique(cls, tools: tuple[Tool, ...]) -> tuple[Tool, ...]:
        if not tools:
            raise ValueError("at least one tool is needed")
        seen: set[str] = set()
        for tool in tools:
            if tool.function.name in seen:
                raise ValueError(f"tool name {tool.function.name!r} is used twice")
            seen.add(tool.function.name)
        return tools

    def tool(self, name: str) -> ToolFunction | None:
        """The function of that name, if the task has it."""
        return next((t.function for t in self.tools if t.function.name == name), None)

    def record_schema(self) -> dict[str, Any]:
        """`{"call": null}` or `{"call": {"name": <a tool>, "arguments": <its parameters>}}`."""
        branches: list[dict[str, Any]] = [{"type": "null"}]
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
                }
            )
        return _one_field_schema("call", {"anyOf": branches, "description": "the call, or null"})


class GenerationTask(_TaskModel):
    """Write a text (a summary, a description from data, ...), scored against a gold text.

    Attributes:
        instruction: What to write, opening the prompt ("Write a one-sentence description of
            the restaurant from its attributes."); None: a generic instruction.
    """

    kind: Literal["generation"] = "generation"
    instruction: Annotated[str, Field(min_length=1)] | None = None

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


class CaseFieldScorer(Protocol):
    """Scores one case's record against its gold record: a kind's per-case score."""

    def __call__(
        self,
        *,
        outputs: Mapping[str, Any],
        reference_outputs: Mapping[str, Any],
        task: Task,
        spec: FieldSpec,
        options: MatchOptions,
        lang: str | None,
    ) -> FieldAccuracy: ...


ExpectedCheck = Callable[[Any, Mapping[str, Any]], Sequence[FormatProblem]]
"""(task, expected) -> problems, each located from `expected` (`expected.label`)."""


def _score_by_field(
    *,
    outputs: Mapping[str, Any],
    reference_outputs: Mapping[str, Any],
    task: Task,
    spec: FieldSpec,
    options: MatchOptions,
    lang: str | None,
) -> FieldAccuracy:
    """Field by field (`evaluators.fields`); on a classification's enum this is label accuracy,
    and on its multi-label array the set F1."""
    return score_fields(
        outputs=outputs, reference_outputs=reference_outputs, schema=spec, options=options, lang=lang
    )


def _no_check(task: Any, expected: Mapping[str, Any]) -> Sequence[FormatProblem]:
    return ()


@dataclass(frozen=True, kw_only=True)
class TaskKind:
    """What one kind of task does.

    Attributes:
        model: The pydantic model of its task.json.
        score: Its per-case scorer; None while it is not wired (scoring then refuses the kind).
        check_expected: Checks a gold `expected` beyond the record schema, with messages
            that say what task.json allows (a label outside the set, an unknown tool).
        scorer_module: Where its scorer lives (or will), for messages and docs.
    """

    model: type[_TaskModel]
    score: CaseFieldScorer | None
    check_expected: ExpectedCheck = _no_check
    scorer_module: str = "evaluators/fields.py"


def _check_classification(task: ClassificationTask, expected: Mapping[str, Any]) -> list[FormatProblem]:
    if task.field not in expected:
        return [FormatProblem(path=f"expected.{task.field}", message="missing")]
    value = expected[task.field]
    values = value if task.multi_label and isinstance(value, list) else [value]
    return [
        FormatProblem(
            path=f"expected.{task.field}",
            message=f"{label!r} is not one of the {len(task.labels)} labels in task.json",
        )
        for label in values
        if label not in task.labels
    ]


def _check_tool_call(task: ToolCallingTask, expected: Mapping[str, Any]) -> list[FormatProblem]:
    if "call" not in expected:
        return [FormatProblem(path="expected.call", message="missing (null when no tool fits)")]
    call = expected["call"]
    if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
        return []  # the record schema names what is wrong with its shape
    tool = task.tool(call["name"])
    if tool is None:
        message = f"{call['name']!r} is not one of the {len(task.tools)} tools in task.json"
        return [FormatProblem(path="expected.call.name", message=message)]
    arguments = call.get("arguments")
    errors = sorted(
        SchemaValidator(tool.parameters, format_checker=SchemaValidator.FORMAT_CHECKER).iter_errors(
            arguments
        ),
        key=lambda e: list(map(str, e.absolute_path)),
    )
    return [
        FormatProblem(
            path=error_path(e.absolute_path, "expected.call.arguments"),
            message=f"{e.message} (the parameters of {tool.name!r})",
        )
        for e in errors
    ]


def _check_generation(task: GenerationTask, expected: Mapping[str, Any]) -> list[FormatProblem]:
    if not isinstance(expected.get("text"), str):
        return [FormatProblem(path="expected.text", message="a generation case needs its gold text")]
    return []


TASK_KINDS: dict[str, TaskKind] = {
    "extraction": TaskKind(model=ExtractionTask, score=_score_by_field),
    "classification": TaskKind(
        model=ClassificationTask, score=_score_by_field, check_expected=_check_classification
    ),
    "tool_calling": TaskKind(
        model=ToolCallingTask,
        score=score_tool_call_case,
        check_expected=_check_tool_call,
        scorer_module="evaluators/tool_calls.py",
    ),
    "generation": TaskKind(
        model=GenerationTask,
        score=score_text,
        check_expected=_check_generation,
        scorer_module="evaluators/generation.py",
    ),
}
"""Every task kind, by its `kind`: the one place a kind is defined (see the module docstring)."""


def case_field_scorer(task: Task) -> CaseFieldScorer:
    """The kind's per-case scorer.

    Raises:
        UsageError: The kind's scorer is not wired yet.
    """
    entry = TASK_KINDS[task.kind]
    if entry.score is None:
        raise UsageError(
            f"scoring {task.kind} cases is not yet supported ({entry.scorer_module} is not wired "
            "into evaluators/tasks.py); `quantgate datasets check` can check the dataset"
        )
    return entry.score


def check_expected(task: Task, expected: Mapping[str, Any]) -> list[FormatProblem]:
    """What is wrong with a gold `expected` for this task, beyond its record schema."""
    return list(TASK_KINDS[task.kind].check_expected(task, expected))


def field_spec(task: Task, record_schema: Mapping[str, Any]) -> FieldSpec:
    """The scored fields of a task's records: the record schema's field tree; for tool calling,
    one field `call` (its `anyOf` is scored whole by the tool-calling scorer, not field by field)."""
    if isinstance(task, ToolCallingTask):
        call = FieldSpec(name="call", kind="string", nullable=True, description="the call, or null")
        return FieldSpec(name="", kind="object", children=(call,))
    return parse_schema(record_schema)
