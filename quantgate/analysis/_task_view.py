"""A run's figures and failures in the terms of its task kind (docs/tasks.md).

`task_figures` reads each variant's kind figures from summary.json (its `kind_figures`: the
kind's `figures_model`, such as `ClassificationSummary`; one definition of each figure;
its kind object's `figure_tables` (`evaluators.kinds`): which are shown, their titles and formats);
`class_recall` and `label_confusion` detail a classification run; `task_failures` lists the
failing cases as the kind reads them: labels, calls or texts, gold beside the reference's and
the candidate's. A figure not measured is NaN in a frame, never 0; a value a variant did not
give (no valid record) is None.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from evaluators.kinds import TaskKind, kind_named, show_call
from evaluators.task_models import LabelSet
from quantgate.analysis._run_view import RunView, failing_cases, only_variant_fails
from quantgate.render._task_figures import figure_table, figure_value

EXTRACTION = "extraction"

NO_ANSWER = "no answer"
"""The confusion matrix's row and column of a case without a label."""


def task_kind(view: RunView) -> str:
    """The run's task kind (`extraction` for a run written before task kinds existed)."""
    return view.run.summary.dataset.task or EXTRACTION


def task_figures(view: RunView) -> pd.DataFrame:
    """One row per variant (summary.json's order), one column per figure of the run's kind: its
    key (its kind's `figure_tables`, `evaluators.kinds`, which title and format it, for the terminal
    and the report alike); NaN where not measured. No column for extraction."""
    section = figure_table(view.run.summary)
    figures = section.figures if section is not None else ()
    keys = [figure.key for figure in figures]
    rows = {
        entry.name: [figure_value(figure, entry) for figure in figures] for entry in view.run.summary.variants
    }
    table = pd.DataFrame.from_dict(rows, orient="index", columns=keys, dtype=float)
    return table.rename_axis(index="variant")


def class_recall(view: RunView) -> pd.DataFrame:
    """A classification run's per-class figures: one row per label (the task's order), `support`
    (the reference's gold cases of it), then each variant's recall (NaN: no support, or not
    measured). Empty for a run of another kind."""
    rows: dict[str, dict[str, Any]] = {}
    for entry in view.run.summary.variants:
        for label, figures in (getattr(entry.kind_figures, "classes", None) or {}).items():
            row = rows.setdefault(label, {"support": figures.support})
            row[entry.name] = figures.recall
    columns = ["support", *(e.name for e in view.run.summary.variants)]
    table = pd.DataFrame.from_dict(rows, orient="index", columns=columns).rename_axis(index="class")
    return table.astype(dict.fromkeys(columns[1:], float))


def _single_label_set(view: RunView) -> LabelSet | None:
    """The run's closed label set when each case holds one label of it (`TaskModel.single_label_set`)."""
    task = view.dataset.task if view.dataset is not None else None
    return task.single_label_set if task is not None else None


def _label(record: dict[str, Any] | None, field: str) -> str:
    value = (record or {}).get(field)
    return value if isinstance(value, str) else NO_ANSWER


def label_confusion(view: RunView, variant: str) -> pd.DataFrame:
    """A run whose cases each hold one label of a closed set (a single-label classification): how
    `variant`'s labels follow the reference's, counted over the cases both recorded: rows the
    reference's label, columns the variant's, in the task's label order, then `no answer`. Empty
    for a run of another kind or a multi-label run."""
    labels = _single_label_set(view)
    if labels is None:
        return pd.DataFrame(dtype=int)
    order = [*labels.labels, NO_ANSWER]
    reference = view.records.get(view.reference, {})
    counts = Counter(
        (_label(reference[case_id].record, labels.field), _label(record.record, labels.field))
        for case_id, record in view.records.get(variant, {}).items()
        if case_id in reference
    )
    cells = [[counts[(row, column)] for column in order] for row in order]
    table = pd.DataFrame(cells, index=order, columns=order, dtype=int)
    return table.rename_axis(index=f"{view.reference} (reference)", columns=variant)


def _value(kind: TaskKind, record: dict[str, Any] | None) -> Any:
    """The part of a record (or of a case's gold) the kind shows; None without a record."""
    return None if record is None else kind.shown_value(record)


def task_failures(view: RunView) -> pd.DataFrame:
    """One row per variant x failing case (`failing_cases`), in the kind's terms.

    Columns: variant, case_id, tags, gold, reference, candidate (the label(s), the call as
    `show_call` writes it, the text, or an extraction's record as JSON; None: no valid record),
    score (the case's field accuracy: for generation its sentence chrF / 100), reference_right
    (the reference got right a field the candidate got wrong), error_kind.
    """
    kind = kind_named(view.run.summary.dataset.task)
    lost = only_variant_fails(view)
    regressed = set(zip(lost["variant"], lost["case_id"], strict=True))
    reference = view.records.get(view.reference, {})
    rows = []
    for entry in failing_cases(view).to_dict("records"):
        variant, case_id = str(entry["variant"]), str(entry["case_id"])
        case = view.case(case_id)
        own = view.records[variant][case_id]
        theirs = reference.get(case_id)
        rows.append(
            {
                "variant": variant,
                "case_id": case_id,
                "tags": entry["tags"],
                "gold": _value(kind, case.expected) if case is not None else None,
                "reference": _value(kind, theirs.record) if theirs is not None else None,
                "candidate": _value(kind, own.record),
                "score": entry["field_accuracy"],
                "reference_right": (variant, case_id) in regressed,
                "error_kind": entry["error_kind"],
            }
        )
    columns = ["variant", "case_id", "tags", "gold", "reference", "candidate", "score", "reference_right"]
    return pd.DataFrame(rows, columns=[*columns, "error_kind"]).astype({"score": float})


__all__ = [
    "NO_ANSWER",
    "class_recall",
    "label_confusion",
    "show_call",
    "task_failures",
    "task_figures",
    "task_kind",
]
