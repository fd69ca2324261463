"""The report's section of a run's task-kind figures as table rows of text: the figures as the
terminal table and decision.md show them (`quantgate.render._task_figures`: one table of titles and
formats), per-class recall (shares in %, support whole) and the labels against the reference's;
`—` where not measured."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from evaluators.kinds import kind_named
from quantgate._formatting import MISSING, percent
from quantgate.analysis._run_view import RunView
from quantgate.analysis._task_view import class_recall, label_confusion, task_kind
from quantgate.render._task_figures import task_figures


def _known(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _recall_text(column: str, value: Any) -> str:
    """A cell of the per-class table: support whole, a recall in %."""
    known = _known(value)
    if known is None:
        return MISSING
    return f"{known:.0f}" if column == "support" else percent(known)


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
    figures = task_figures(view.run.summary)
    if figures is None:
        return None
    recall_table = class_recall(view)  # empty but for a classification run
    recall = None if recall_table.empty else _table(recall_table, "class", _recall_text)
    return {
        "kind": kind,
        "title": kind_named(kind).title,
        "figure_rows": [figures.header, *figures.rows],
        "figure_note": figures.note,
        "recall_rows": recall,
        "confusions": _confusions(view),
    }
