"""The report's section of a run's task-kind figures (`quantgate.analysis.task_view`) as table rows
of text: shares in %, ratios with two decimals, counts whole; `—` where not measured."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from quantgate.analysis.run_view import RunView
from quantgate.analysis.task_view import KIND_FIGURES, class_recall, label_confusion, task_figures, task_kind
from quantgate.formatting import MISSING, percent

_RATIOS = ("length_ratio", "length_ratio_reference")
_COUNTS = ("no_answer",)

KIND_TITLES = {
    "classification": "Classification",
    "generation": "Generation",
    "tool_calling": "Tool calling",
}


def _known(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def figure_text(key: str, value: Any) -> str:
    """One figure of a kind as the report shows it."""
    known = _known(value)
    if known is None:
        return MISSING
    if key in _COUNTS:
        return f"{known:.0f}"
    if key in _RATIOS:
        return f"{known:.2f}"
    return percent(known)


def _table(frame: pd.DataFrame, corner: str, cell: Any) -> list[list[str]]:
    header = [corner, *(str(c) for c in frame.columns)]
    rows = [[str(i), *(cell(col, value) for col, value in row.items())] for i, row in frame.iterrows()]
    return [header, *rows]


def _confusions(view: RunView) -> list[dict[str, Any]]:
    found = []
    for name in view.quantized:
        frame = label_confusion(view, name)
        if not frame.empty:
            rows = _table(frame, f"{view.reference} ↓ / {name} →", lambda _c, v: str(int(v)))
            found.append({"variant": name, "rows": rows})
    return found


def task_context(view: RunView) -> dict[str, Any] | None:
    """The template's `task` section; None for an extraction run (its figures are the summary's)."""
    kind = task_kind(view)
    if kind not in KIND_FIGURES:
        return None
    figures = task_figures(view)
    titles = KIND_FIGURES[kind]
    rows = [["variant", *(titles[key] for key in figures.columns)]]
    for name, row in figures.iterrows():
        marker = " *" if name == view.reference else ""
        rows.append([f"{name}{marker}", *(figure_text(str(k), v) for k, v in row.items())])
    recall = None
    if kind == "classification":
        table = class_recall(view)
        if not table.empty:
            recall = _table(
                table, "class", lambda c, v: figure_text("no_answer" if c == "support" else "recall", v)
            )
    return {
        "kind": kind,
        "title": KIND_TITLES[kind],
        "figure_rows": rows,
        "recall_rows": recall,
        "confusions": _confusions(view),
    }
