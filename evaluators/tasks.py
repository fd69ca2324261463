"""Task kinds and their models in one import: the registry `evaluators.kinds` (one `TaskKind`
object per kind, docs/development.md's "Adding a task kind") and the task.json models of
`evaluators.task_models`.

A task is one of four pydantic models, told apart by `kind`: `ExtractionTask` (the default; the
record schema is the dataset's schema.json), `ClassificationTask`, `ToolCallingTask` and
`GenerationTask` (their record schema is derived from the task: `record_schema()`). Everything
downstream (constrained decoding, validation, prompts, scoring) works on that record schema.
"""

from __future__ import annotations

from evaluators.kinds import (
    TASK_KINDS,
    CaseFieldScorer,
    TaskKind,
    case_field_scorer,
    check_expected,
    field_spec,
    gold_in_record_shape,
    kind_of,
    parse_task,
    register_kind,
    unregister_kind,
)
from evaluators.task_models import (
    ClassificationTask,
    ExtractionTask,
    GenerationTask,
    Task,
    TaskModel,
    Tool,
    ToolCallingTask,
    ToolFunction,
)

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
    "gold_in_record_shape",
    "kind_of",
    "parse_task",
    "register_kind",
    "unregister_kind",
]
