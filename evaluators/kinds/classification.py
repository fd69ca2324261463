"""The classification kind: one label of a closed set (or several, with `multi_label`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaluators.classification_figures import (
    ClassificationSummary,
    reported_label_probabilities,
    summarize_labels,
    summarize_multi_label,
)
from evaluators.format import FormatProblem
from evaluators.kinds.kind import FigureTable, KindFigure, LabeledCase, TaskKind, gold_kept, score_by_field
from evaluators.task_models import ClassificationTask, parse_task

__all__ = ["CLASSIFICATION"]

_F1 = "{:.3f}"
_COUNT = "{:.0f}"
_CHANGE = "{:+.3f}"


def _check(task: ClassificationTask, expected: Mapping[str, Any]) -> list[FormatProblem]:
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


def _instruction(task: ClassificationTask, schema: Mapping[str, Any]) -> str:
    labels = [f"- {label}" for label in task.labels]
    if task.multi_label:
        return "\n".join(
            [
                "Classify the text with every label that applies, from these labels:",
                *labels,
                'Answer with one JSON object: {"labels": [the labels that apply]}, or {"labels": []} '
                "when none applies.",
            ]
        )
    return "\n".join(
        [
            "Classify the text into one of these labels:",
            *labels,
            'Answer with one JSON object: {"label": "the label"}.',
        ]
    )


def _figures(
    task: ClassificationTask, cases: Sequence[LabeledCase], *, against_reference: bool
) -> ClassificationSummary | None:
    """Accuracy, macro-F1, per-class figures and confusion matrix (multi-label: subset accuracy,
    micro-F1, Hamming loss) from the labeled cases' label field, with the calibration of the
    reported label probabilities; none when a case's gold label was not kept. A case without a
    valid record has no answer."""
    scored = [case.fields[task.field] for case in cases]
    if not gold_kept(scored):
        return None
    gold = [s.expected for s in scored]
    predicted = [None if s.outcome == "no_output" else s.predicted for s in scored]
    if task.multi_label:
        return summarize_multi_label(labels=task.labels, gold=gold, predicted=predicted)
    probabilities = [reported_label_probabilities(case.reported, task.labels) for case in cases]
    return summarize_labels(labels=task.labels, gold=gold, predicted=predicted, probabilities=probabilities)


_SINGLE_LABEL = FigureTable(
    shown="classification",
    figures=(
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
    note="accuracy: label accuracy; worst recall: the class with the lowest recall among "
    "those with gold cases; ECE, Brier: calibration of the chosen label's probability; P(gold): mean "
    "probability of the gold label; Δ P(gold): the variant's minus the reference's, per case, over the "
    "cases both scored, and apart where the reference gave the gold label < 0.5 (ref unsure) or "
    "≥ 0.5 (ref sure); — when the backend gives no label probabilities",
)

_MULTI_LABEL = FigureTable(
    shown="multi-label classification",
    figures=(
        KindFigure(key="subset_accuracy", title="subset accuracy"),
        KindFigure(key="micro_f1", title="micro-F1", template=_F1),
        KindFigure(key="macro_f1", title="macro-F1", template=_F1),
        KindFigure(key="hamming_loss", title="Hamming loss", template=_F1),
        KindFigure(key="no_answer", title="no answer", template=_COUNT),
    ),
    note="subset accuracy: the whole label set right; Hamming loss: share of wrong (case, label) decisions",
    when_measured="subset_accuracy",
)

CLASSIFICATION = TaskKind(
    model=ClassificationTask,
    score=score_by_field,
    check_expected=_check,
    parse=parse_task,
    instruction=_instruction,
    shown_value=lambda record: record.get("labels", record.get("label")),
    title="Classification",
    figures_model=ClassificationSummary,
    make_figures=_figures,
    figure_tables=(_MULTI_LABEL, _SINGLE_LABEL),
    opener="open_classifier",
)
"""Classification: label accuracy (multi-label: the set F1) per case; its figures per variant."""
