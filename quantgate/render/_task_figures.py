"""A run's task-kind figures per variant (classification, multi-label, generation, tool calling):
the section the terminal table, decision.md and suite_decision.md show under a run of that kind,
and the HTML report too (`quantgate.analysis._task_report`). Which figures each kind shows, their
titles and formats are its kind object's (`evaluators.kinds`: `TaskKind.figure_tables`); the
notebook's frame takes their keys.

An extraction run has none (its figures are the summary table's own columns). Every cell comes
from the variant's `kind_figures` in summary.json; a figure not measured shows as `—`, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluators.kinds import FigureTable, KindFigure, kind_named
from evaluators.kinds.extraction import EXTRACTION
from quantgate._formatting import number, percent
from quantgate.rundir._summary import RunSummary, VariantEntry

__all__ = [
    "KindFigure",
    "TaskFigures",
    "figure_table",
    "figure_text",
    "figure_value",
    "task_figures",
    "task_kind_of",
    "worst_recall",
]


def figure_value(figure: KindFigure, entry: VariantEntry) -> float | None:
    """The figure of `entry` as the summary keeps it (None: not measured)."""
    if figure.key == "worst_recall":
        worst = worst_recall(entry)
        return None if worst is None else worst[1]
    value = getattr(entry.kind_figures, figure.key, None)
    return None if value is None else float(value)


def figure_text(figure: KindFigure, entry: VariantEntry) -> str:
    """The figure of `entry` as shown; `MISSING` when not measured, never 0."""
    value = figure_value(figure, entry)
    if value is None or figure.template is None:
        shown = percent(value)
    else:
        shown = number(value * figure.scale, figure.template)
    worst = worst_recall(entry) if figure.key == "worst_recall" else None
    return shown if worst is None else f"{shown} ({worst[0]})"


def worst_recall(entry: VariantEntry) -> tuple[str, float] | None:
    """The class with the lowest recall among those with support, first in the task's label order
    on a tie (None: no class figures)."""
    classes = getattr(entry.kind_figures, "classes", None) or {}
    recalls = [(label, c.recall) for label, c in classes.items() if c.recall is not None]
    if not recalls:
        return None
    return min(recalls, key=lambda pair: pair[1])


@dataclass(frozen=True, kw_only=True)
class TaskFigures:
    """A run's task-kind section: its title (the kind), a header row, a row per variant, a note."""

    kind: str
    header: list[str]
    rows: list[list[str]]
    note: str


def figure_table(summary: RunSummary) -> FigureTable | None:
    """The run's figure section, as its kind chooses it from what the variants measured (None:
    an extraction run, or a kind not registered here: `kind_named`)."""

    def measured(key: str) -> bool:
        return any(getattr(entry.kind_figures, key, None) is not None for entry in summary.variants)

    return kind_named(summary.dataset.task).figure_table(measured)


def task_kind_of(summary: RunSummary) -> str:
    """The run's task kind as shown: extraction, classification, multi-label classification,
    generation or tool calling (a run of before task kinds: extraction)."""
    table = figure_table(summary)
    return table.shown if table is not None else (summary.dataset.task or EXTRACTION.name).replace("_", " ")


def task_figures(summary: RunSummary, *, reference_mark: str = " *") -> TaskFigures | None:
    """The run's task-kind figures per variant (None for an extraction run). The reference's name
    carries `reference_mark`; a skipped variant's cells are empty after `skipped`."""
    table = figure_table(summary)
    if table is None:
        return None
    figures = table.figures
    rows = []
    for entry in summary.variants:
        name = entry.name + (reference_mark if entry.is_reference else "")
        if entry.status == "skipped":
            rows.append([name, "skipped", *[""] * (len(figures) - 1)])
        else:
            rows.append([name, *(figure_text(figure, entry) for figure in figures)])
    header = ["variant", *(figure.title for figure in figures)]
    return TaskFigures(kind=table.shown, header=header, rows=rows, note=table.note)
