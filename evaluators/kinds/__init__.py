"""Task kinds: what a dataset asks of the model, declared in its `task.json` (docs/tasks.md).

Each kind is one `TaskKind` object in its own module (`extraction.py`, `classification.py`,
`tool_calling.py`, `generation.py`) holding everything that differs per kind: its task model
(`evaluators.task_models`), record schema's field tree, gold checks, case scorer, prompt
instruction, the values its outcomes keep, what its failures show, its figures per variant (their
model, how they are made, their titles and formats), and the production opener of its runs.
`TASK_KINDS` maps a kind's name to its object; shared code asks `kind_of(task)` and never compares
a kind's name. `register_kind` adds a kind (a plugin's, or a test's toy kind) without touching this
package.

A variant's figures of its kind are one sub-object of its entry in summary.json, `kind_figures`
(`KindFiguresPart`), tagged with the kind's name and read through the registered kind's
`figures_model` (`KindFiguresField`).

Adding a kind: the "Adding a task kind" recipe in docs/development.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, SerializeAsAny, ValidatorFunctionWrapHandler, WrapValidator

from evaluators.chrf import GenerationSummary
from evaluators.classification_figures import ClassificationSummary
from evaluators.errors import UsageError
from evaluators.format import FormatProblem
from evaluators.kinds.classification import CLASSIFICATION
from evaluators.kinds.extraction import EXTRACTION, instructions
from evaluators.kinds.generation import GENERATION
from evaluators.kinds.kind import (
    CaseFieldScorer,
    ExpectedCheck,
    FiguresMaker,
    FigureTable,
    KindFigure,
    LabeledCase,
    TaskKind,
)
from evaluators.kinds.tool_calling import TOOL_CALLING, show_call
from evaluators.results import EvaluatorResult, KindFigures
from evaluators.schema import FieldSpec
from evaluators.task_models import Task
from evaluators.tool_calls import ToolCallSummary

__all__ = [
    "TASK_KINDS",
    "CaseFieldScorer",
    "ExpectedCheck",
    "FigureTable",
    "FiguresMaker",
    "KindFigure",
    "KindFigures",
    "KindFiguresField",
    "KindFiguresPart",
    "LabeledCase",
    "TaskKind",
    "case_field_scorer",
    "check_expected",
    "field_spec",
    "gold_in_record_shape",
    "instructions",
    "kind_figures",
    "kind_named",
    "kind_of",
    "parse_task",
    "register_kind",
    "show_call",
    "unregister_kind",
]

TASK_KINDS: dict[str, TaskKind] = {
    kind.name: kind for kind in (EXTRACTION, CLASSIFICATION, TOOL_CALLING, GENERATION)
}
"""Every task kind, by its name (its task.json `kind`)."""


def register_kind(kind: TaskKind) -> None:
    """Add a task kind (its name is its model's `kind`).

    Raises:
        ValueError: A kind of that name is registered already.
    """
    if kind.name in TASK_KINDS:
        raise ValueError(f"task kind {kind.name!r} is registered already")
    TASK_KINDS[kind.name] = kind


def unregister_kind(name: str) -> None:
    """Remove a kind `register_kind` added (a test's toy kind)."""
    TASK_KINDS.pop(name, None)


def kind_of(task: Task | Any) -> TaskKind:
    """The kind object of a task (anything with a registered `kind`)."""
    return TASK_KINDS[task.kind]


def kind_named(name: str | None) -> TaskKind:
    """The kind a run names (summary.json's `dataset.task`): extraction for None (a run written
    before task kinds) or a kind not registered here, whose records are then shown as extraction's."""
    return TASK_KINDS.get(name or EXTRACTION.name, EXTRACTION)


def parse_task(raw: Any) -> Task:
    """A task from its JSON value, by its kind's `parse` (pydantic's `ValidationError` on a bad one;
    a value without a registered `kind` goes to the built-in models' union, which names it)."""
    name = raw.get("kind") if isinstance(raw, Mapping) else None
    kind = TASK_KINDS.get(name) if isinstance(name, str) else None
    parsed: Task = (kind or EXTRACTION).parse_task(raw)
    return parsed


def case_field_scorer(task: Task) -> CaseFieldScorer:
    """The kind's per-case scorer.

    Raises:
        UsageError: The kind's scorer is not wired yet.
    """
    entry = kind_of(task)
    if entry.score is None:
        raise UsageError(
            f"scoring {task.kind} cases is not yet supported ({entry.scorer_module} is not wired "
            "into its kind in evaluators/kinds/); `quantgate datasets check` can check the dataset"
        )
    return entry.score


def check_expected(task: Task, expected: Mapping[str, Any]) -> list[FormatProblem]:
    """What is wrong with a gold `expected` for this task, beyond its record schema."""
    return list(kind_of(task).check_expected(task, expected))


def gold_in_record_shape(task: Task, expected: Mapping[str, Any]) -> bool:
    """Whether the record schema checks this gold `expected` (its kind's `gold_in_record_shape`)."""
    return kind_of(task).gold_in_record_shape(expected)


def field_spec(task: Task, record_schema: Mapping[str, Any]) -> FieldSpec:
    """The scored fields of a task's records (its kind's `field_spec`)."""
    return kind_of(task).field_spec(record_schema)


def kind_figures(
    task: Task | Any, cases: Sequence[LabeledCase], *, against_reference: bool
) -> KindFigures | None:
    """A variant's figures of its task's kind from its labeled cases (None: the kind has none, or
    they are not measured)."""
    make = kind_of(task).make_figures
    return None if make is None else make(task, cases, against_reference=against_reference)


def _registered_figures(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A `kind_figures` value through its registered kind's `figures_model` (a plugin's kind too);
    anything else through the built-in kinds' union, whose error names what is wrong."""
    if isinstance(value, KindFigures) and type(value) is not KindFigures:
        return value
    name = value.get("kind") if isinstance(value, Mapping) else None
    kind = TASK_KINDS.get(name) if isinstance(name, str) else None
    if kind is not None and kind.figures_model is not None:
        return kind.figures_model.model_validate(value)
    return handler(value)


if TYPE_CHECKING:
    KindFiguresField = KindFigures  # what a reader narrows (`isinstance`) to its kind's model
else:
    KindFiguresField = Annotated[
        SerializeAsAny[
            Annotated[
                ClassificationSummary | GenerationSummary | ToolCallSummary, Field(discriminator="kind")
            ]
        ],
        WrapValidator(_registered_figures),
    ]
"""The type of `kind_figures`: the figures of a registered kind, by their `kind` (the JSON Schema
lists the built-in kinds'; a plugin kind's figures are its `figures_model`'s)."""


class KindFiguresPart(EvaluatorResult):
    """The part of a variant's summary its run's task kind makes (`kind_figures`)."""

    kind_figures: KindFiguresField | None = Field(
        default=None,
        description="The variant's figures of the run's task kind, tagged with the kind (`kind`: "
        "classification, generation, tool_calling, or a plugin's kind): its model is the kind's "
        "`figures_model` (evaluators.kinds). None: the kind has none (extraction), or not measured.",
    )
