"""A variant against the reference on the same cases: paired deltas, verdicts, regressions.

Inputs are per-case field scores (what records.jsonl holds under `fields`). Overall and
per-slice figures use each case's mean field score; because every case of a dataset has
the same fields, their mean over cases is the micro field accuracy of the summaries. A
case is "right" for McNemar's test when all its fields are right; a field is right when
it scores 1.0. Agreement with the reference needs no gold: it is the variant's record
scored against the reference's record.

The interval a delta is judged by holds at any sample size for differences in [-1, 1]: the
betting confidence interval of a fixed sample (`method="betting"`, `evaluators.betting`), or
the anytime-valid confidence sequence of the per-case differences in case order
(`method="sequential"`), which stays valid when a run looks at it after every round. The
paired percentile bootstrap is kept beside it as a descriptive figure
(`descriptive_interval`): at 30 to 200 cases with rare, large failures its coverage falls far
short of its nominal level (docs/decision.md), so it never gates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from pydantic import Field as PydanticField

from evaluators.aggregate import mean
from evaluators.betting import DEFAULT_TRUNCATION, betting_interval, confidence_sequence
from evaluators.results import EvaluatorResult
from evaluators.statistics import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Interval,
    Verdict,
    bootstrap_interval,
    equivalence_verdict,
    mcnemar_exact,
)

IntervalMethod = Literal["betting", "sequential"]
"""How a delta's gating interval is computed: for a fixed sample, or for rounds."""


@dataclass(frozen=True, kw_only=True)
class ComparisonOptions:
    """How deltas are judged.

    Attributes:
        margin: Equivalence margin as a fraction (0.02 is 2 points).
        min_cases: Fewer paired cases than this is inconclusive.
        confidence: Coverage of the intervals.
        resamples: Resamples of the descriptive bootstrap interval.
        seed: Its seed.
        method: "betting" (a fixed sample: the betting confidence interval) or "sequential"
            (the confidence sequence over the differences in case order; anytime-valid, so
            `min_cases` does not apply).
        truncation: The betting truncation (`evaluators.betting.DEFAULT_TRUNCATION`; runs
            written before it was recorded used `CONFSEQ_TRUNCATION`).
    """

    margin: float = 0.02
    min_cases: int = 10
    confidence: float = 0.95
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    method: IntervalMethod = "betting"
    truncation: float = DEFAULT_TRUNCATION


def delta_interval(deltas: Sequence[float], options: ComparisonOptions) -> Interval | None:
    """The interval a delta is judged by: the mean of paired per-case deltas (in [-1, 1], in case
    order), valid at any number of cases, by the options' method."""
    if options.method == "sequential":
        return confidence_sequence(deltas, confidence=options.confidence, truncation=options.truncation)
    return betting_interval(deltas, confidence=options.confidence, truncation=options.truncation)


def descriptive_interval(deltas: Sequence[float], options: ComparisonOptions) -> Interval | None:
    """The paired percentile bootstrap of the mean delta: descriptive only, never a gate."""
    found = bootstrap_interval(
        deltas, confidence=options.confidence, resamples=options.resamples, seed=options.seed
    )
    if found is None:
        return None
    return replace(found, method=f"{found.method} (descriptive: its coverage is not assured at small n)")


@dataclass(frozen=True, kw_only=True)
class PairedCase:
    """One case scored for both sides: field name to score in [0, 1]; `agreement`, the variant's
    record scored against the reference's per field (None: not known, the reference gave no record),
    which the flips read (`evaluators.flips`)."""

    case_id: str
    tags: tuple[str, ...] = ()
    reference: Mapping[str, float]
    variant: Mapping[str, float]
    agreement: Mapping[str, float] | None = None


@dataclass(frozen=True, kw_only=True)
class PairedDelta:
    """Variant minus reference on the paired cases.

    Attributes:
        cases: Paired cases.
        reference: The reference's mean score; None when no case was paired.
        variant: The variant's mean score.
        delta: variant - reference.
        interval: The interval `delta` is judged by (`delta_interval`: valid at any n).
        reference_only: Cases right for the reference only (McNemar's b).
        variant_only: Cases right for the variant only (McNemar's c).
        mcnemar_p: Exact McNemar p-value.
        verdict: Equivalence verdict against the margin.
        reason: Why that verdict.
        descriptive_interval: The paired percentile bootstrap of `delta`, shown beside it,
            never judged (`descriptive_interval`).
    """

    cases: int
    reference: float | None
    variant: float | None
    delta: float | None
    interval: Interval | None
    reference_only: int
    variant_only: int
    mcnemar_p: float | None
    verdict: Verdict
    reason: str
    descriptive_interval: Interval | None = None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """Paired deltas overall, per field and per slice (tag)."""

    overall: PairedDelta
    fields: dict[str, PairedDelta] = field(default_factory=dict)
    slices: dict[str, PairedDelta] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class Regression:
    """A case the reference got right on some fields where the variant did not."""

    case_id: str
    tags: tuple[str, ...]
    fields: tuple[str, ...]
    reference_score: float
    variant_score: float


def paired_delta(
    *,
    reference: Sequence[float],
    variant: Sequence[float],
    reference_correct: Sequence[bool],
    variant_correct: Sequence[bool],
    options: ComparisonOptions = ComparisonOptions(),
) -> PairedDelta:
    """Compare paired per-case scores: delta, its interval (and the descriptive bootstrap), McNemar,
    verdict.

    Args:
        reference: The reference's score per case.
        variant: The variant's score per case, same order.
        reference_correct: Whether the reference got each case right.
        variant_correct: Whether the variant did.
        options: Margin, minimum cases and interval settings.
    """
    if not len(reference) == len(variant) == len(reference_correct) == len(variant_correct):
        raise ValueError("paired sequences must have the same length")
    deltas = [v - r for r, v in zip(reference, variant, strict=True)]
    interval = delta_interval(deltas, options)
    b = sum(r and not v for r, v in zip(reference_correct, variant_correct, strict=True))
    c = sum(v and not r for r, v in zip(reference_correct, variant_correct, strict=True))
    min_cases = 1 if options.method == "sequential" else options.min_cases
    verdict, reason = equivalence_verdict(
        interval=interval, margin=options.margin, cases=len(deltas), min_cases=min_cases
    )
    ref_mean, var_mean = mean(reference), mean(variant)
    return PairedDelta(
        cases=len(deltas),
        reference=ref_mean,
        variant=var_mean,
        delta=mean(deltas),
        interval=interval,
        reference_only=b,
        variant_only=c,
        mcnemar_p=mcnemar_exact(reference_only=b, variant_only=c) if deltas else None,
        verdict=verdict,
        reason=reason,
        descriptive_interval=descriptive_interval(deltas, options),
    )


def _case_mean(scores: Mapping[str, float]) -> float:
    return sum(scores.values()) / len(scores) if scores else 0.0


def case_difference(case: PairedCase) -> float:
    """A paired case's difference: the variant's case accuracy (mean field score) minus the
    reference's, in [-1, 1]; the per-case value every accuracy-delta interval is built from."""
    return _case_mean(case.variant) - _case_mean(case.reference)


def accuracy_delta(cases: Sequence[PairedCase]) -> float | None:
    """The accuracy delta, variant minus reference: the mean over the paired cases of the
    difference of their case accuracies (a case's mean field score). None without cases.

    This is the `delta` of `compare_paired(...).overall`, without its interval: the summary
    shows it, the decision judges it with its interval.
    """
    return mean(case_difference(c) for c in cases)


def _overall(cases: Sequence[PairedCase], options: ComparisonOptions) -> PairedDelta:
    return paired_delta(
        reference=[_case_mean(c.reference) for c in cases],
        variant=[_case_mean(c.variant) for c in cases],
        reference_correct=[all(s == 1.0 for s in c.reference.values()) for c in cases],
        variant_correct=[all(s == 1.0 for s in c.variant.values()) for c in cases],
        options=options,
    )


def compare_paired(
    cases: Sequence[PairedCase],
    *,
    options: ComparisonOptions = ComparisonOptions(),
) -> Comparison:
    """Paired comparison overall, per field and per slice.

    Args:
        cases: The cases both sides have scores for.
        options: Margin, minimum cases and interval settings.
    """
    names = list(dict.fromkeys(name for c in cases for name in c.reference))
    fields = {}
    for name in names:
        ref = [c.reference.get(name, 0.0) for c in cases]
        var = [c.variant.get(name, 0.0) for c in cases]
        fields[name] = paired_delta(
            reference=ref,
            variant=var,
            reference_correct=[s == 1.0 for s in ref],
            variant_correct=[s == 1.0 for s in var],
            options=options,
        )
    tags = sorted({t for c in cases for t in c.tags})
    slices = {tag: _overall([c for c in cases if tag in c.tags], options) for tag in tags}
    return Comparison(overall=_overall(cases, options), fields=fields, slices=slices)


def regressions(cases: Sequence[PairedCase]) -> list[Regression]:
    """Cases with at least one field right for the reference and not for the variant."""
    found = []
    for case in cases:
        lost = tuple(
            name
            for name, score in case.reference.items()
            if score == 1.0 and case.variant.get(name, 0.0) < 1.0
        )
        if lost:
            found.append(
                Regression(
                    case_id=case.case_id,
                    tags=case.tags,
                    fields=lost,
                    reference_score=_case_mean(case.reference),
                    variant_score=_case_mean(case.variant),
                )
            )
    return found


@dataclass(frozen=True, kw_only=True)
class AgreementSummary:
    """Agreement of a variant's records with the reference's records, no gold needed.

    Attributes:
        cases: Cases where the reference produced a valid record.
        overall: Mean agreement over cases (each case's mean over fields).
        interval: Betting confidence interval of `overall` (valid at any n).
        fields: Per field: mean agreement and its betting confidence interval.
    """

    cases: int
    overall: float | None
    interval: Interval | None
    fields: dict[str, tuple[float | None, Interval | None]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


class ReferenceAgreement(EvaluatorResult):
    """A variant's pooled agreement with the reference's records, as the evaluation graph reports it
    (no interval: `summarize_agreement` adds those from the records).

    Attributes:
        agreement_with_reference: Micro agreement over the cases the reference answered (None: this
            is the reference, or no case to compare).
        agreement_fields: Per field (dotted name), its agreement.
        agreement_cases: Cases compared (None: this is the reference).
    """

    agreement_with_reference: float | None = None
    agreement_fields: dict[str, float | None] = PydanticField(default_factory=dict)
    agreement_cases: int | None = None


def summarize_agreement(
    per_case: Sequence[Mapping[str, float]],
    *,
    options: ComparisonOptions = ComparisonOptions(),
) -> AgreementSummary:
    """Mean agreement overall and per field, with intervals valid at any number of cases (the
    betting confidence interval of a mean in [0, 1], in case order).

    Args:
        per_case: For each case the reference answered, in case order: field name to agreement score.
        options: Confidence and betting settings.
    """

    def interval(values: Sequence[float]) -> Interval | None:
        return betting_interval(
            values, confidence=options.confidence, low=0.0, high=1.0, truncation=options.truncation
        )

    overall = [_case_mean(c) for c in per_case]
    names = list(dict.fromkeys(name for c in per_case for name in c))
    fields = {}
    for name in names:
        values = [c[name] for c in per_case if name in c]
        fields[name] = (mean(values), interval(values))
    return AgreementSummary(
        cases=len(per_case), overall=mean(overall), interval=interval(overall), fields=fields
    )
