"""Task-level figures of a classification dataset: accuracy, macro-F1, per-class recall and
precision, the confusion matrix, the multi-label figures and the calibration of the chosen label.

Pure functions of the cases' gold labels and a variant's predicted labels, in case order. A
prediction of None is a case without an answer (an invalid or missing output): it is wrong, it
is a miss of its gold class (never a false positive of another), and it has its own last column
in the confusion matrix. A predicted label outside the task's labels is an answer the derived
schema's `enum` refuses, so it is counted as no answer too.

F1 of a class is 2·TP / (2·TP + FP + FN). A class absent from both the gold and the predictions
has no F1 (0/0) and is left out of macro-F1, as scikit-learn's `zero_division=np.nan` does; a class
predicted but never gold has recall None and F1 0, and counts in macro-F1.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from evaluators.aggregate import mean
from evaluators.rates import proportion
from evaluators.results import EvaluatorResult, KindFigures

__all__ = [
    "CALIBRATION_BINS",
    "LABEL_PROBABILITY_KEY",
    "Calibration",
    "CalibrationShift",
    "ClassFigures",
    "ClassificationSummary",
    "calibration",
    "calibration_shift",
    "confusion_matrix",
    "reported_label_probabilities",
    "summarize_labels",
    "summarize_multi_label",
]

LABEL_PROBABILITY_KEY = "label_probability"
"""A backend's answer reports the chosen label's probability under this key and each label's under
`label_probability:<label>` (numbers of its response metadata, which an attempt's `reported` keeps)."""

CALIBRATION_BINS = 10
"""Equal-width bins of the expected calibration error: [0, 0.1], (0.1, 0.2], ..., (0.9, 1]."""


class ClassFigures(EvaluatorResult):
    """One class's figures.

    Attributes:
        support: Cases whose gold holds the class.
        predicted: Cases whose prediction holds the class.
        precision: Correct predictions of the class among its predictions (None: never predicted).
        recall: Its gold cases predicted as the class (None: no support).
        f1: 2·TP / (2·TP + FP + FN) (None: neither gold nor predicted).
    """

    support: int
    predicted: int
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None


class ClassificationSummary(KindFigures):
    """A variant's classification figures (its `kind_figures` in summary.json); each None when not
    measured.

    Attributes:
        classification_cases: Cases with a gold label.
        no_answer: Cases without an answer (invalid or missing output), counted wrong.
        label_accuracy: Share of cases whose predicted label is the gold one (single-label).
        macro_f1: Mean F1 over the labels that are gold or predicted at least once.
        classes: Per-class support, precision, recall and F1, in the task's label order.
        confusion: Gold by predicted counts; rows and columns in the task's label order, plus a
            last column for no answer (single-label only).
        subset_accuracy: Share of cases whose predicted label set is the gold one (multi-label).
        micro_f1: F1 of all (case, label) decisions pooled (multi-label).
        hamming_loss: Share of wrong (case, label) decisions; a case without an answer counts
            every label wrong (multi-label).
        calibrated_cases: Cases with the chosen label's probability (None: the backend gives none).
        expected_calibration_error: Over `CALIBRATION_BINS` equal-width bins of that probability.
        brier_score: Mean squared difference between that probability and correctness (0 or 1).
        gold_label_probability: Mean probability the model gave the gold label, over the cases
            with label probabilities (those the backend scored; None: none).
        gold_probability_pairs, gold_probability_change, gold_probability_change_unsure,
        gold_probability_change_sure, reference_unsure_cases: How the variant moves the gold
            label's probability against the reference's (`evaluators.label_confidence`); set once
            the reference's probabilities are known, None for the reference and when not measured.
    """

    kind: Literal["classification"] = "classification"
    classification_cases: int | None = None
    no_answer: int | None = None
    label_accuracy: float | None = None
    macro_f1: float | None = None
    classes: dict[str, ClassFigures] | None = None
    confusion: list[list[int]] | None = None
    subset_accuracy: float | None = None
    micro_f1: float | None = None
    hamming_loss: float | None = None
    calibrated_cases: int | None = None
    expected_calibration_error: float | None = None
    brier_score: float | None = None
    gold_label_probability: float | None = None
    gold_probability_pairs: int | None = None
    gold_probability_change: float | None = None
    gold_probability_change_unsure: float | None = None
    gold_probability_change_sure: float | None = None
    reference_unsure_cases: int | None = None


class Calibration(EvaluatorResult):
    """Calibration of the chosen label's probability.

    Attributes:
        cases: Cases with a probability.
        expected_calibration_error: Σ_bins (n_bin / n) · |accuracy_bin - mean probability_bin|.
        brier_score: Mean of (probability - correct)², correct being 0 or 1.
    """

    cases: int
    expected_calibration_error: float | None = None
    brier_score: float | None = None


class CalibrationShift(EvaluatorResult):
    """How a variant moves the chosen label's probability against the reference, on the cases
    where both give one (so the reference's and the variant's figures are of the same cases).

    Attributes:
        pairs: Cases with both probabilities.
        probability_change: Mean of variant - reference probability, per case.
        abs_probability_change: Mean of |variant - reference probability|.
        reference: The reference's calibration on the pairs.
        variant: The variant's calibration on the pairs.
        ece_change: Variant - reference expected calibration error.
        brier_change: Variant - reference Brier score.
    """

    pairs: int
    probability_change: float | None = None
    abs_probability_change: float | None = None
    reference: Calibration = Field(default_factory=lambda: Calibration(cases=0))
    variant: Calibration = Field(default_factory=lambda: Calibration(cases=0))
    ece_change: float | None = None
    brier_change: float | None = None


def _checked(labels: Sequence[str], gold: Sequence[object], predicted: Sequence[object]) -> None:
    if len(set(labels)) != len(labels) or not labels:
        raise ValueError(f"labels must be distinct and not empty: {list(labels)}")
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predictions")


def _class_figures(tp: int, fp: int, fn: int) -> ClassFigures:
    return ClassFigures(
        support=tp + fn,
        predicted=tp + fp,
        precision=proportion(tp, tp + fp),
        recall=proportion(tp, tp + fn),
        f1=proportion(2 * tp, 2 * tp + fp + fn),
    )


def _macro_f1(classes: dict[str, ClassFigures]) -> float | None:
    return mean(c.f1 for c in classes.values() if c.f1 is not None)


def confusion_matrix(
    *, labels: Sequence[str], gold: Sequence[str], predicted: Sequence[str | None]
) -> list[list[int]]:
    """Counts of gold by predicted label.

    Args:
        labels: The task's labels, in its order (rows, and the first columns).
        gold: Each case's gold label, one of `labels`.
        predicted: Each case's predicted label, None for no answer.

    Returns:
        One row per label; one column per label plus a last one for no answer (a prediction
        of None or outside `labels`).

    Raises:
        ValueError: A gold label outside `labels`, or the two sequences differ in length.
    """
    _checked(labels, gold, predicted)
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * (len(labels) + 1) for _ in labels]
    for want, got in zip(gold, predicted, strict=True):
        if want not in index:
            raise ValueError(f"gold label {want!r} is not one of the task's labels")
        matrix[index[want]][index.get(got, len(labels)) if got is not None else len(labels)] += 1
    return matrix


def summarize_labels(
    *,
    labels: Sequence[str],
    gold: Sequence[str],
    predicted: Sequence[str | None],
    probabilities: Sequence[Mapping[str, float] | None] | None = None,
) -> ClassificationSummary:
    """The figures of a single-label classification (see the module's docstring for F1's 0/0).

    Args:
        labels: The task's labels, in its order.
        gold: Each case's gold label.
        predicted: Each case's predicted label, None for no answer.
        probabilities: Each case's probability of every label over the closed set, None where
            not measured (a case without an answer, a backend without logits); None: none at all.
            The chosen label's makes the calibration (`calibration`), the gold label's its mean.

    Raises:
        ValueError: As `confusion_matrix`, or `probabilities` of another length than `gold`.
    """
    matrix = confusion_matrix(labels=labels, gold=gold, predicted=predicted)
    classes: dict[str, ClassFigures] = {}
    for i, label in enumerate(labels):
        tp = matrix[i][i]
        fp = sum(row[i] for row in matrix) - tp
        fn = sum(matrix[i]) - tp
        classes[label] = _class_figures(tp, fp, fn)
    correct = sum(matrix[i][i] for i in range(len(labels)))
    return ClassificationSummary(
        classification_cases=len(gold),
        no_answer=sum(row[-1] for row in matrix),
        label_accuracy=proportion(correct, len(gold)),
        macro_f1=_macro_f1(classes),
        classes=classes,
        confusion=matrix,
        **_label_calibration(gold, predicted, probabilities),
    )


def _label_calibration(
    gold: Sequence[str],
    predicted: Sequence[str | None],
    probabilities: Sequence[Mapping[str, float] | None] | None,
) -> dict[str, Any]:
    """`summarize_labels`' calibration figures: none without probabilities."""
    if probabilities is None or all(p is None for p in probabilities):
        return {}
    if len(probabilities) != len(gold):
        raise ValueError(f"{len(gold)} cases but {len(probabilities)} label probabilities")
    chosen = [
        None if p is None or label is None else p.get(label)
        for p, label in zip(probabilities, predicted, strict=True)
    ]
    result = calibration(correct=[g == c for g, c in zip(gold, predicted, strict=True)], probability=chosen)
    on_gold = [p.get(g, 0.0) for p, g in zip(probabilities, gold, strict=True) if p is not None]
    return {
        "calibrated_cases": result.cases,
        "expected_calibration_error": result.expected_calibration_error,
        "brier_score": result.brier_score,
        "gold_label_probability": mean(on_gold),
    }


def summarize_multi_label(
    *,
    labels: Sequence[str],
    gold: Sequence[Sequence[str]],
    predicted: Sequence[Sequence[str] | None],
) -> ClassificationSummary:
    """The figures of a multi-label classification: subset accuracy, micro- and macro-F1,
    Hamming loss and per-class figures (no confusion matrix).

    A case without an answer (None) predicts no label for F1 (its gold labels are misses), is
    wrong for subset accuracy, and has every label wrong for the Hamming loss. Labels outside
    `labels` in a prediction are ignored; duplicates collapse.

    Raises:
        ValueError: A gold label outside `labels`, or the two sequences differ in length.
    """
    _checked(labels, gold, predicted)
    known = set(labels)
    counts = {label: [0, 0, 0] for label in labels}  # tp, fp, fn
    exact = wrong_decisions = no_answer = 0
    for want_labels, got_labels in zip(gold, predicted, strict=True):
        want = set(want_labels)
        if not want <= known:
            raise ValueError(f"gold labels {sorted(want - known)} are not among the task's labels")
        got = set(got_labels or ()) & known
        no_answer += got_labels is None
        exact += got_labels is not None and got == want
        wrong_decisions += len(labels) if got_labels is None else len(want ^ got)
        for label in labels:
            counts[label][0] += label in want and label in got
            counts[label][1] += label in got and label not in want
            counts[label][2] += label in want and label not in got
    classes = {label: _class_figures(*counts[label]) for label in labels}
    tp, fp, fn = (sum(c[k] for c in counts.values()) for k in range(3))
    return ClassificationSummary(
        classification_cases=len(gold),
        no_answer=no_answer,
        macro_f1=_macro_f1(classes),
        classes=classes,
        subset_accuracy=proportion(exact, len(gold)),
        micro_f1=proportion(2 * tp, 2 * tp + fp + fn),
        hamming_loss=proportion(wrong_decisions, len(gold) * len(labels)),
    )


def reported_label_probabilities(
    reported: Mapping[str, float], labels: Sequence[str]
) -> dict[str, float] | None:
    """Each label's probability as an answer's `reported` numbers carry them
    (`LABEL_PROBABILITY_KEY`); None unless every label has one."""
    found = {label: reported.get(f"{LABEL_PROBABILITY_KEY}:{label}") for label in labels}
    return None if any(p is None for p in found.values()) else {k: float(p or 0.0) for k, p in found.items()}


def calibration(
    *, correct: Sequence[bool], probability: Sequence[float | None], bins: int = CALIBRATION_BINS
) -> Calibration:
    """Expected calibration error and Brier score of the chosen label's probability.

    Args:
        correct: Each case's chosen label is the gold one.
        probability: The probability the model gave its chosen label; None where not measured
            (no answer, or a backend without probabilities): the case is left out.
        bins: Equal-width bins over [0, 1]; bin k holds (k/bins, (k+1)/bins], the first also 0.

    Raises:
        ValueError: A probability outside [0, 1], fewer than 1 bin, or unequal lengths.
    """
    if bins < 1 or len(correct) != len(probability):
        raise ValueError(f"{bins} bins, or {len(correct)} cases but {len(probability)} probabilities")
    pairs = [(p, float(c)) for c, p in zip(correct, probability, strict=True) if p is not None]
    if any(not 0.0 <= p <= 1.0 for p, _ in pairs):
        raise ValueError("a probability is outside [0, 1]")
    if not pairs:
        return Calibration(cases=0)
    edges = [k / bins for k in range(1, bins)]
    binned: list[list[tuple[float, float]]] = [[] for _ in range(bins)]
    for p, c in pairs:
        binned[bisect_left(edges, p)].append((p, c))  # edges < p: p = k/bins closes bin k-1
    ece = sum(abs(sum(c - p for p, c in members)) for members in binned) / len(pairs)
    brier = sum((p - c) ** 2 for p, c in pairs) / len(pairs)
    return Calibration(cases=len(pairs), expected_calibration_error=ece, brier_score=brier)


def calibration_shift(
    *,
    reference_correct: Sequence[bool],
    reference_probability: Sequence[float | None],
    variant_correct: Sequence[bool],
    variant_probability: Sequence[float | None],
    bins: int = CALIBRATION_BINS,
) -> CalibrationShift:
    """How quantization moves the chosen label's probability and its calibration: paired
    differences per case (variant - reference) on the cases where both give a probability.

    Args:
        reference_correct: Per case, the reference's chosen label is the gold one.
        reference_probability: Per case, the reference's probability of its chosen label.
        variant_correct: The same for the variant, same cases in the same order.
        variant_probability: The same for the variant.
        bins: Bins of the expected calibration error.

    Raises:
        ValueError: The sequences differ in length, or as `calibration`.
    """
    sequences = (reference_correct, reference_probability, variant_correct, variant_probability)
    if len({len(sequence) for sequence in sequences}) != 1:
        raise ValueError("the reference's and the variant's cases differ in number")
    both = [
        (i, r, v)
        for i, (r, v) in enumerate(zip(reference_probability, variant_probability, strict=True))
        if r is not None and v is not None
    ]
    reference = calibration(
        correct=[reference_correct[i] for i, _, _ in both], probability=[r for _, r, _ in both], bins=bins
    )
    variant = calibration(
        correct=[variant_correct[i] for i, _, _ in both], probability=[v for _, _, v in both], bins=bins
    )
    changes = [v - r for _, r, v in both]
    return CalibrationShift(
        pairs=len(both),
        probability_change=mean(changes),
        abs_probability_change=mean(abs(change) for change in changes),
        reference=reference,
        variant=variant,
        ece_change=_difference(variant.expected_calibration_error, reference.expected_calibration_error),
        brier_change=_difference(variant.brier_score, reference.brier_score),
    )


def _difference(variant: float | None, reference: float | None) -> float | None:
    return None if variant is None or reference is None else variant - reference
