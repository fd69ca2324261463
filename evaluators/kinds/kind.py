"""`TaskKind`: everything that differs between task kinds, one object per kind.

Shared code asks the task's kind object (`evaluators.kinds.kind_of`) and never compares a
kind's name: the model of its task.json, how a task is parsed, its record's field tree, its gold
checks, its case scorer, its prompt instruction, what its outcomes keep, what its failures show,
its figures per variant (their model, how they are made from the labeled cases, their titles and
formats) with the section's title, and the production opener of its runs.
The objects hold data and pure functions only (this is the evaluators' layer); the layers above
read them (`graphs.prompting`, `quantgate.render._task_figures`, `quantgate.analysis`, ...).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from evaluators.fields import FieldAccuracy, FieldScore, score_fields
from evaluators.format import FormatProblem
from evaluators.matchers import MatchOptions
from evaluators.results import KindFigures
from evaluators.schema import FieldSpec, parse_schema
from evaluators.task_models import Task, TaskModel

__all__ = [
    "CaseFieldScorer",
    "ExpectedCheck",
    "FigureTable",
    "FiguresMaker",
    "KindFigure",
    "LabeledCase",
    "TaskKind",
    "gold_kept",
    "score_by_field",
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


@dataclass(frozen=True, kw_only=True)
class LabeledCase:
    """What a kind's figures read of one labeled case of a variant: plain data from its outcome
    (`graphs.variant_summary` makes it, so that the kinds need nothing of the graphs).

    Attributes:
        fields: The case's field scores against its gold, by field (with the gold and predicted
            values when the kind `keeps_values`).
        agreement: Its field scores against the reference's record (None: the variant is the
            reference, or the reference has no record of the case).
        reported: The numbers its last attempt reported (label probabilities; empty: none).
        tags: The case's tags (its slices; tool calling's BFCL category).
        task: The case's task when cases bring their own tools (None: the dataset's).
    """

    fields: Mapping[str, FieldScore]
    agreement: Mapping[str, FieldScore] | None = None
    reported: Mapping[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    task: Task | None = None


class FiguresMaker(Protocol):
    """Makes a variant's figures of its kind from its labeled cases (None: not measured)."""

    def __call__(
        self, task: Any, cases: Sequence[LabeledCase], *, against_reference: bool
    ) -> KindFigures | None: ...


def gold_kept(scored: Sequence[FieldScore]) -> bool:
    """Every labeled case kept its gold value (`TaskKind.keeps_values`): a case without it cannot be
    scored, so the kind's figures are not measured rather than wrong."""
    return all(s.expected is not None for s in scored)


ExpectedCheck = Callable[[Any, Mapping[str, Any]], Sequence[FormatProblem]]
"""(task, expected) -> problems, each located from `expected` (`expected.label`)."""


def score_by_field(
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


def _record_json(record: Mapping[str, Any]) -> Any:
    return json.dumps(record, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True, kw_only=True)
class KindFigure:
    """One figure of a task kind: the one definition of its title and format, which the terminal
    table, decision.md, suite_decision.md, the HTML report and the notebook frame all use
    (`quantgate.render._task_figures` reads it from a variant's summary entry).

    Attributes:
        key: Its key in a variant's `kind_figures` in summary.json (`worst_recall`: made from `classes`).
        title: Its column's title.
        template: Its format (`str.format`); None: a share, in % with one decimal.
        scale: Shown as value x scale (chrF: the summary keeps it / 100, shown 0-100).
    """

    key: str
    title: str
    template: str | None = None
    scale: float = 1.0


@dataclass(frozen=True, kw_only=True)
class FigureTable:
    """A kind's section of figures under a run: its figures in the order shown, its note.

    Attributes:
        shown: The kind as the section names it (`multi-label classification`).
        figures: Its figures, in the order shown.
        note: What the figures mean, under the table.
        when_measured: The table is the kind's when some variant measured this key (a multi-label
            run's `subset_accuracy`); None: the kind's table otherwise.
    """

    shown: str
    figures: tuple[KindFigure, ...]
    note: str
    when_measured: str | None = None


@dataclass(frozen=True, kw_only=True)
class TaskKind:
    """What one kind of task does.

    Attributes:
        model: The pydantic model of its task.json (its `kind` default is the kind's name).
        score: Its per-case scorer; None while it is not wired (scoring then refuses the kind).
        check_expected: Checks a gold `expected` beyond the record schema, with messages
            that say what task.json allows (a label outside the set, an unknown tool).
        gold_in_record_shape: Whether a gold `expected` has the record's shape, which the record
            schema then checks (not tool calling's gold calls in BFCL's form: `check_expected`
            checks those whole).
        scorer_module: Where its scorer lives (or will), for messages and docs.
        field_spec: The scored fields, from the record schema: its field tree unless the kind
            scores a construct the tree does not read (tool calling's `anyOf`).
        parse: A task of the kind from its JSON value (pydantic's `ValidationError` on a bad one).
        instruction: The prompt's system text, from the task and its record schema.
        keeps_values: Its outcomes keep each field's gold and predicted values, which its
            figures read (`graphs.outcomes.retained`).
        shown_value: The part of a record (or of a case's gold) its failures show.
        title: The title of its section in the HTML report.
        case_score_title: The title of a case's score in the report's failure browser.
        figures_model: The type of its figures per variant, a variant's `kind_figures` in
            summary.json (None: the kind has none beyond the common figures).
        make_figures: Makes them from a variant's labeled cases (None: none).
        figure_tables: Its figure sections (none: its figures are the summary table's own).
        opener: The `quantgate.production` function that opens its runs.
    """

    model: type[TaskModel]
    score: CaseFieldScorer | None
    check_expected: ExpectedCheck = _no_check
    gold_in_record_shape: Callable[[Mapping[str, Any]], bool] = lambda expected: True
    scorer_module: str = "evaluators/fields.py"
    field_spec: Callable[[Mapping[str, Any]], FieldSpec] = parse_schema
    parse: Callable[[Any], Any] | None = None
    instruction: Callable[[Any, Mapping[str, Any]], str] | None = None
    keeps_values: bool = True
    shown_value: Callable[[Mapping[str, Any]], Any] = _record_json
    title: str = ""
    case_score_title: str = "score"
    figures_model: type[KindFigures] | None = None
    make_figures: FiguresMaker | None = None
    figure_tables: tuple[FigureTable, ...] = ()
    opener: str = "open_extractor"

    @property
    def name(self) -> str:
        """The kind's name, its task.json `kind` (the model's `kind` default)."""
        return str(self.model.model_fields["kind"].default)

    def parse_task(self, raw: Any) -> Any:
        """A task of this kind from its JSON value (`parse`, else the model's validation)."""
        return (self.parse or self.model.model_validate)(raw)

    def figure_table(self, measured: Callable[[str], bool]) -> FigureTable | None:
        """Its figure section for a run: the first whose `when_measured` key some variant measured
        (`measured(key)`), else the first without one; None when the kind has none."""
        chosen = next((t for t in self.figure_tables if t.when_measured and measured(t.when_measured)), None)
        return chosen or next((t for t in self.figure_tables if t.when_measured is None), None)
