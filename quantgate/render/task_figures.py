"""A run's task-kind figures per variant (classification, multi-label, generation, tool calling):
the section the terminal table, decision.md and suite_decision.md show under a run of that kind.

An extraction run has none (its figures are the summary table's own columns). Every cell comes
from the variant's entry in summary.json; a figure not measured shows as `—`, never 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from quantgate.formatting import MISSING, number, percent
from quantgate.rundir.summary import RunSummary, VariantEntry

__all__ = ["TaskFigures", "task_figures", "task_kind_of", "worst_recall"]


def _share(key: str) -> Callable[[VariantEntry], str]:
    return lambda entry: percent(getattr(entry, key, None))


def _plain(key: str, template: str = "{:.3f}") -> Callable[[VariantEntry], str]:
    return lambda entry: number(getattr(entry, key, None), template)


def _chrf(key: str) -> Callable[[VariantEntry], str]:
    """chrF on its usual 0-100 scale (the summary keeps it / 100)."""

    def cell(entry: VariantEntry) -> str:
        value = getattr(entry, key, None)
        return number(None if value is None else value * 100, "{:.1f}")

    return cell


def worst_recall(entry: VariantEntry) -> tuple[str, float] | None:
    """The class with the lowest recall among those with support, first in the task's label order
    on a tie (None: no class figures)."""
    recalls = [(label, c.recall) for label, c in (entry.classes or {}).items() if c.recall is not None]
    if not recalls:
        return None
    return min(recalls, key=lambda pair: pair[1])


def _worst_recall_cell(entry: VariantEntry) -> str:
    worst = worst_recall(entry)
    return MISSING if worst is None else f"{percent(worst[1])} ({worst[0]})"


Column = tuple[str, Callable[[VariantEntry], str]]

_CLASSIFICATION: list[Column] = [
    ("accuracy", _share("label_accuracy")),
    ("macro-F1", _plain("macro_f1")),
    ("worst recall (label)", _worst_recall_cell),
    ("no answer", _plain("no_answer", "{}")),
    ("ECE", _plain("expected_calibration_error")),
    ("Brier", _plain("brier_score")),
]
_MULTI_LABEL: list[Column] = [
    ("subset accuracy", _share("subset_accuracy")),
    ("micro-F1", _plain("micro_f1")),
    ("macro-F1", _plain("macro_f1")),
    ("Hamming loss", _plain("hamming_loss")),
    ("no answer", _plain("no_answer", "{}")),
]
_GENERATION: list[Column] = [
    ("chrF vs gold", _chrf("chrf")),
    ("chrF vs reference", _chrf("chrf_reference")),
    ("length ratio", _plain("length_ratio", "{:.2f}")),
    ("length ratio vs reference", _plain("length_ratio_reference", "{:.2f}")),
    ("empty", _share("empty_text_share")),
]
_TOOL_CALLING: list[Column] = [
    ("selection", _share("tool_selection_accuracy")),
    ("arguments", _share("argument_accuracy")),
    ("exact call", _share("exact_call_rate")),
    ("abstention", _share("abstention_accuracy")),
    ("false abstention", _share("false_abstention_rate")),
    ("schema valid", _share("schema_validity")),
]

_NOTES = {
    "classification": "accuracy: label accuracy; worst recall: the class with the lowest recall among "
    "those with gold cases; ECE, Brier: calibration of the chosen label's probability (— when the "
    "backend gives none)",
    "multi-label classification": "subset accuracy: the whole label set right; Hamming loss: share of "
    "wrong (case, label) decisions",
    "generation": "chrF (0-100, corpus chrF2) against the gold texts and against the reference "
    "model's; length ratio: output / target characters; empty: missing or empty outputs",
    "tool calling": "selection: the right tool, or rightly no call; arguments: where the right tool "
    "was called; abstention: no call where none is due; false abstention: no call where one is due; "
    "schema valid: calls whose arguments fit the tool's parameters",
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


_COLUMNS: dict[str, list[Column]] = {
    "classification": _CLASSIFICATION,
    "multi-label classification": _MULTI_LABEL,
    "generation": _GENERATION,
    "tool calling": _TOOL_CALLING,
}
"""Each shown kind's columns (an extraction run has none)."""


def task_figures(summary: RunSummary, *, reference_mark: str = " *") -> TaskFigures | None:
    """The run's task-kind figures per variant (None for an extraction run). The reference's name
    carries `reference_mark`; a skipped variant's cells are empty after `skipped`."""
    kind = task_kind_of(summary)
    columns = _COLUMNS.get(kind)
    if columns is None:
        return None
    rows = []
    for entry in summary.variants:
        name = entry.name + (reference_mark if entry.is_reference else "")
        if entry.status == "skipped":
            rows.append([name, "skipped", *[""] * (len(columns) - 1)])
        else:
            rows.append([name, *(cell(entry) for _, cell in columns)])
    header = ["variant", *(title for title, _ in columns)]
    return TaskFigures(kind=kind, header=header, rows=rows, note=_NOTES[kind])
