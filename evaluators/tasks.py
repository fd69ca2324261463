"""Task kinds: what a dataset asks of the model, declared in its `task.json` (docs/tasks.md).

A task is one of four pydantic models (`evaluators.task_models`, re-exported here), told apart
by `kind`: `ExtractionTask` (the default; the record schema is the dataset's schema.json),
`ClassificationTask`, `ToolCallingTask` and `GenerationTask` (their record schema is derived
from the task: `record_schema()`). Everything downstream (constrained decoding, validation,
prompts, scoring) works on that record schema.

`TASK_KINDS` is the one registry of what each kind does; a kind's entry names its model, how
its field tree is read, how a case's fields are scored and how a gold `expected` is checked.
The prompt instruction of each kind is in `graphs.prompting` (graphs import evaluators, not
the reverse), keyed by the same `kind`.

Adding a kind (the "Adding a task kind" recipe in docs/development.md):

1. Its model in `evaluators/task_models.py`: a `TaskModel` subclass with `kind: Literal["..."]`,
   its fields and their checks, `record_schema()` (the shape of `expected` and of the model's
   output, which constrained decoding enforces) and `summary()`; add it to the `Task` union.
2. Its case scorer in its own evaluator module (`evaluators/tool_calls.py`, ...) with the
   `CaseFieldScorer` signature: keyword-only `outputs` (the model's record, valid against the
   record schema), `reference_outputs` (the gold record, or the reference model's record for
   agreement), `task`, `spec`, `options`, `lang`; it returns a `FieldAccuracy` with one
   `FieldScore` per field of the kind (`call`, `text`, ...). It imports the task models from
   `evaluators.task_models`, never from here (this module imports the scorer).
3. Its `TASK_KINDS` entry below: model, `score`, `check_expected` (what task.json allows of a
   gold, beyond the record schema), and `field_spec` when the field tree of its record schema
   is not what it scores.
4. Its prompt instruction in `graphs.prompting.TASK_INSTRUCTIONS`, and its section in docs/tasks.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from evaluators.errors import UsageError
from evaluators.fields import FieldAccuracy, score_fields
from evaluators.format import FormatProblem, error_path
from evaluators.generation import score_text
from evaluators.matchers import MatchOptions
from evaluators.schema import FieldSpec, parse_schema
from evaluators.task_models import (
    ClassificationTask,
    ExtractionTask,
    GenerationTask,
    Task,
    TaskModel,
    Tool,
    ToolCallingTask,
    ToolFunction,
    parse_task,
)
from evaluators.tool_calls import score_tool_call_case
from evaluators.validation import SchemaValidator

__all__ = [
    "TASK_KINDS",
    "CaseFieldScorer",
    "ClassificationTask",
    "ExtractionTask",
    "GenerationTask",
    "Task",
    "TaskKind",
    "TaskModel",
    "Tool",
    "ToolCallingTask",
    "ToolFunction",
    "case_field_scorer",
    "check_expected",
    "field_spec",
    "parse_task",
]


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
        field_spec: The scored fields, from the record schema: its field tree unless the kind
            scores a construct the tree does not read (tool calling's `anyOf`).
    """

    model: type[TaskModel]
    score: CaseFieldScorer | None
    check_expected: ExpectedCheck = _no_check
    scorer_module: str = "evaluators/fields.py"
    field_spec: Callable[[Mapping[str, Any]], FieldSpec] = parse_schema


def _call_field(record_schema: Mapping[str, Any]) -> FieldSpec:
    """Tool calling's one field, `call`: its `anyOf` is scored whole by the tool-calling scorer,
    not field by field (the field tree reads no `anyOf`); `kind` only names how it is shown."""
    call = FieldSpec(name="call", kind="string", nullable=True, description="the call, or null")
    return FieldSpec(name="", kind="object", children=(call,))


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
        field_spec=_call_field,
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
    """The scored fields of a task's records (its kind's `field_spec`)."""
    return TASK_KINDS[task.kind].field_spec(record_schema)
