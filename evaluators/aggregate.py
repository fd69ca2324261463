"""Dataset-level figures from per-case scores: micro and macro field accuracy, per field,
per slice (tag) and format validity. An empty set has no mean: such figures are None."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import Field

from evaluators.fields import FieldAccuracy
from evaluators.format import FormatResult
from evaluators.rates import share
from evaluators.results import EvaluatorResult


@dataclass(frozen=True, kw_only=True)
class CaseScore:
    """Everything scored about one case.

    Attributes:
        case_id: The case's id.
        tags: The case's tags (its slices).
        fields: Field scores; None when the case has no gold record.
        format: Format validity; None when it was not measured.
    """

    case_id: str
    tags: tuple[str, ...] = ()
    fields: FieldAccuracy | None = None
    format: FormatResult | None = None


class DatasetScore(EvaluatorResult):
    """Aggregates over a dataset.

    Attributes:
        cases: Number of cases scored.
        field_accuracy: Micro average: all field scores of all cases pooled.
        field_accuracy_macro: Mean of the per-field accuracies.
        fields: Per-field accuracy (mean over cases).
        format_validity: Share of cases whose output parsed and matched the schema.
        slices: Micro field accuracy over the cases carrying each tag.
        slice_cases: Number of scored cases per tag.
    """

    cases: int
    field_accuracy: float | None = None
    field_accuracy_macro: float | None = None
    fields: dict[str, float | None] = Field(default_factory=dict)
    format_validity: float | None = None
    slices: dict[str, float | None] = Field(default_factory=dict)
    slice_cases: dict[str, int] = Field(default_factory=dict)


def mean(values: Iterable[float]) -> float | None:
    """Arithmetic mean, None for an empty input."""
    items = list(values)
    return sum(items) / len(items) if items else None


def aggregate(case_scores: Iterable[CaseScore]) -> DatasetScore:
    """Pool per-case scores into dataset figures.

    Args:
        case_scores: One entry per case, including failed and missing ones (they carry
            zero field scores and an invalid format, so they count as failures).

    Returns:
        The aggregates; each is None when nothing it averages was measured.
    """
    scores = list(case_scores)
    per_field: dict[str, list[float]] = defaultdict(list)
    per_slice: dict[str, list[float]] = defaultdict(list)
    slice_cases: dict[str, int] = defaultdict(int)
    for case in scores:
        if case.fields is None:
            continue
        values = [f.score for f in case.fields.fields.values()]
        for name, result in case.fields.fields.items():
            per_field[name].append(result.score)
        for tag in case.tags:
            per_slice[tag].extend(values)
            slice_cases[tag] += 1
    pooled = [v for values in per_field.values() for v in values]
    field_means = {name: mean(values) for name, values in per_field.items()}
    measured_formats = [c.format.valid for c in scores if c.format is not None]
    return DatasetScore(
        cases=len(scores),
        field_accuracy=mean(pooled),
        field_accuracy_macro=mean(v for v in field_means.values() if v is not None),
        fields=field_means,
        format_validity=share(measured_formats),
        slices={tag: mean(values) for tag, values in sorted(per_slice.items())},
        slice_cases=dict(sorted(slice_cases.items())),
    )
