"""A run's task-kind figures per variant (classification, multi-label, generation, tool calling):
the section the terminal table, decision.md and suite_decision.md show under a run of that kind,
and the HTML report too (`quantgate.analysis.task_report`). `KIND_FIGURES` is the one table of
which figures each kind shows, their titles and formats; the notebook's frame takes its keys.

An extraction run has none (its figures are the summary table's own columns). Every cell comes
from the variant's entry in summary.json; a figure not measured shows as `—`, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from quantgate.formatting import number, percent
from quantgate.rundir.summary import RunSummary, VariantEntry

__all__ = ["KIND_FIGURES", "KindFigure", "TaskFigures", "task_figures", "task_kind_of", "worst_recall"]


@dataclass(frozen=True, kw_only=True)
class KindFigure:
    """One figure of a task kind: the one definition of its title and format, which the terminal
    table, decision.md, suite_decision.md, the HTML report and the notebook frame all use.

    Attributes:
        key: Its key in a variant's entry of summary.json (`worst_recall`: made from `classes`).
        title: Its column's title.
        template: Its format (`str.format`); None: a share, in % with one decimal.
        scale: Shown as value x scale (chrF: the summary keeps it / 100, shown 0-100).
    """

    key: str
    title: str
    template: str | None = None
    scale: float = 1.0

    def value(self, entry: VariantEntry) -> float | None:
        """The figure of `entry` as the summary keeps it (None: not measured)."""
        if self.key == "worst_recall":
            worst = worst_recall(entry)
            return None if worst is None else worst[1]
        value = getattr(entry, self.key, None)
        return None if value is None else float(value)

    def text(self, entry: VariantEntry) -> str:
        """The figure of `entry` as shown; `MISSING` when not measured, never 0."""
        value = self.value(entry)
        if value is None or self.template is None:
            shown = percent(value)
        else:
            shown = number(value * self.scale, self.template)
        worst = worst_recall(entry) if self.key == "worst_recall" else None
        return shown if worst is None else f"{shown} ({worst[0]})"


def worst_recall(entry: VariantEntry) -> tuple[str, float] | None:
    """The class with the lowest recall among those with support, first in the task's label order
    on a tie (None: no class figures)."""
    recalls = [(label, c.recall) for label, c in (entry.classes or {}).items() if c.recall is not None]
    if not recalls:
        return None
    return min(recalls, key=lambda pair: pair[1])


_F1 = "{:.3f}"
_COUNT = "{:.0f}"
_RATIO = "{:.2f}"
_CHANGE = "{:+.3f}"

KIND_FIGURES: dict[str, tuple[KindFigure, ...]] = {
    "classification": (
        KindFigure(key="label_accuracy", title="accuracy"),
        KindFigure(key="macro_f1", title="macro-F1", template=_F1),
        KindFigure(key="worst_recall", title="worst recall (label)"),
        KindFigure(key="no_answer", title="no answer", template=_COUNT),
        KindFigure(key="expected_calibration_error", title="ECE", template=_F1),
        KindFigure(key="brier_score", title="Brier", template=_F1),
        KindFigure(key="gold_label_probability", title="P(gold)", template=_F1),
        KindFigure(key="gold_probability_change", title="Δ P(gold)", template=_CHANGE),
        KindFigure(key="gold_probability_change_unsure", title="Δ ref unsure", template=_CHANGE),
        KindFigure(key="gold_probability_change_sure", title="Δ ref sure", template=_CHANGE),
    ),
    "multi-label classification": (
        KindFigure(key="subset_accuracy", title="subset accuracy"),
        KindFigure(key="micro_f1", title="micro-F1", template=_F1),
        KindFigure(key="macro_f1", title="macro-F1", template=_F1),
        KindFigure(key="hamming_loss", title="Hamming loss", template=_F1),
        KindFigure(key="no_answer", title="no answer", template=_COUNT),
    ),
    "generation": (
        KindFigure(key="chrf", title="chrF vs gold", template="{:.1f}", scale=100.0),
        KindFigure(key="chrf_reference", title="chrF vs reference", template="{:.1f}", scale=100.0),
        KindFigure(key="length_ratio", title="length ratio vs gold", template=_RATIO),
        KindFigure(key="length_ratio_reference", title="length ratio vs reference", template=_RATIO),
        KindFigure(key="empty_text_share", title="empty texts"),
    ),
    "tool calling": (
        KindFigure(key="tool_selection_accuracy", title="tool selection"),
        KindFigure(key="argument_accuracy", title="arguments"),
        KindFigure(key="exact_call_rate", title="exact call"),
        KindFigure(key="abstention_accuracy", title="abstention"),
        KindFigure(key="false_abstention_rate", title="false abstention"),
        KindFigure(key="schema_validity", title="schema validity"),
    ),
}
"""Each shown kind's figures, in the order shown (an extraction run has none: its figures are the
summary table's own columns)."""

_NOTES = {
    "classification": "accuracy: label accuracy; worst recall: the class with the lowest recall among "
    "those with gold cases; ECE, Brier: calibration of the chosen label's probability; P(gold): mean "
    "probability of the gold label; Δ P(gold): the variant's minus the reference's, per case, over the "
    "cases both scored, and apart where the reference gave the gold label < 0.5 (ref unsure) or "
    "≥ 0.5 (ref sure); — when the backend gives no label probabilities",
    "multi-label classification": "subset accuracy: the whole label set right; Hamming loss: share of "
    "wrong (case, label) decisions",
    "generation": "chrF (0-100, corpus chrF2) against the gold texts and against the reference "
    "model's; length ratio: output / target characters; empty texts: missing or empty outputs",
    "tool calling": "tool selection: the right tool, or rightly no call; arguments: where the right "
    "tool was called; abstention: no call where none is due; false abstention: no call where one is "
    "due; schema validity: calls whose arguments fit the tool's parameters",
}


@dataclass(frozen=True, kw_only=True)
class TaskFigures:
    """A run's task-kind section: its title (the kind), a header row, a row per variant, a note."""

    kind: str
    header: list[str]
    rows: list[list[str]]
    note: str


def task_kind_of(summary: RunSummary) -> str:
    """The run's task kind as shown: extraction, classification, multi-label classification,
    generation or tool calling (a run of before task kinds: extraction)."""
    task = summary.dataset.task or "extraction"
    if task == "classification" and any(e.subset_accuracy is not None for e in summary.variants):
        return "multi-label classification"
    return task.replace("_", " ")


def task_figures(summary: RunSummary, *, reference_mark: str = " *") -> TaskFigures | None:
    """The run's task-kind figures per variant (None for an extraction run). The reference's name
    carries `reference_mark`; a skipped variant's cells are empty after `skipped`."""
    kind = task_kind_of(summary)
    figures = KIND_FIGURES.get(kind)
    if figures is None:
        return None
    rows = []
    for entry in summary.variants:
        name = entry.name + (reference_mark if entry.is_reference else "")
        if entry.status == "skipped":
            rows.append([name, "skipped", *[""] * (len(figures) - 1)])
        else:
            rows.append([name, *(figure.text(entry) for figure in figures)])
    header = ["variant", *(figure.title for figure in figures)]
    return TaskFigures(kind=kind, header=header, rows=rows, note=_NOTES[kind])
