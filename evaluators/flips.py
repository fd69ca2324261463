"""Flips: how often a variant's answer differs from the reference's, by kind, with bounds valid at any n.

A weak reference bounds the accuracy drop: when the reference is right on 13% of cases, a
variant can lose at most 13 points, however many answers it changes, so the accuracy gate cannot
catch a variant that changes almost every answer. Flips count the changes themselves. For each
labeled case paired with the reference, each scored field (a classification's label is one
field) is one of:

- right to wrong: the reference's field is right (scores 1.0) and the variant's is not;
- wrong to right: the variant's is right and the reference's is not;
- wrong to another wrong: both are wrong and the variant's value differs from the reference's (its
  agreement with the reference's record, field by field, is below 1.0);
- not flipped: both right, or both wrong with the same value.

A case's flip share is the fraction of its fields flipped, in [0, 1] (for a classification, 0 or
1); the share of each kind likewise. The figures are their means over the paired cases, each with
the interval the accuracy delta is judged by (`comparison.delta_interval`'s method, on [0, 1]): the
betting confidence interval of a fixed sample, or the anytime-valid confidence sequence of a
sequential run, which may be looked at after every round.

A field both got wrong whose agreement is unknown (the reference gave no record for the case, so
there is no value to differ from) is not counted as a flip: the error-rate and validity gates judge
a reference that gives no record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from evaluators.aggregate import mean
from evaluators.betting import betting_interval, confidence_sequence
from evaluators.comparison import ComparisonOptions, PairedCase
from evaluators.statistics import Interval

FlipKind = Literal["right_to_wrong", "wrong_to_right", "wrong_to_wrong"]
FLIP_KINDS: tuple[FlipKind, ...] = ("right_to_wrong", "wrong_to_right", "wrong_to_wrong")
"""The kinds of flip, in the order they are shown."""


@dataclass(frozen=True, kw_only=True)
class CaseFlips:
    """One paired case's fields, counted by kind of flip.

    Attributes:
        fields: The reference's scored fields of the case.
        right_to_wrong: Fields right for the reference, wrong for the variant.
        wrong_to_right: Fields wrong for the reference, right for the variant.
        wrong_to_wrong: Fields wrong for both, with different values.
    """

    fields: int
    right_to_wrong: int
    wrong_to_right: int
    wrong_to_wrong: int

    @property
    def flipped(self) -> int:
        """Fields flipped, of any kind."""
        return self.right_to_wrong + self.wrong_to_right + self.wrong_to_wrong

    def share(self, kind: FlipKind | None = None) -> float:
        """The fraction of the case's fields flipped (of one kind; None: of any), in [0, 1]."""
        if not self.fields:
            return 0.0
        return (self.flipped if kind is None else getattr(self, kind)) / self.fields


def case_flips(case: PairedCase) -> CaseFlips:
    """Count a paired case's flips field by field (see the module docstring).

    Args:
        case: The case's field scores for both sides, and the variant's agreement with the
            reference's record per field (`PairedCase.agreement`; None: the reference gave none).
    """
    right_to_wrong = wrong_to_right = wrong_to_wrong = 0
    for name, reference_score in case.reference.items():
        reference_right = reference_score == 1.0
        variant_right = case.variant.get(name, 0.0) == 1.0
        if reference_right and not variant_right:
            right_to_wrong += 1
        elif variant_right and not reference_right:
            wrong_to_right += 1
        elif not reference_right and not variant_right:
            agreement = case.agreement.get(name) if case.agreement is not None else None
            wrong_to_wrong += agreement is not None and agreement < 1.0
    return CaseFlips(
        fields=len(case.reference),
        right_to_wrong=right_to_wrong,
        wrong_to_right=wrong_to_right,
        wrong_to_wrong=wrong_to_wrong,
    )


@dataclass(frozen=True, kw_only=True)
class FlipShare:
    """The mean share of fields flipped over the paired cases, with its interval.

    Attributes:
        share: The mean over cases of each case's flipped fraction (None: no case).
        interval: Its interval, valid at any number of cases (None: no case).
    """

    share: float | None
    interval: Interval | None


@dataclass(frozen=True, kw_only=True)
class FlipSummary:
    """A variant's flips against the reference on the labeled paired cases.

    Attributes:
        cases: Paired cases counted.
        fields: Fields counted over those cases.
        flipped: Fields flipped, of any kind (the flip gate's figure).
        right_to_wrong: Right for the reference, wrong for the variant.
        wrong_to_right: Wrong for the reference, right for the variant.
        wrong_to_wrong: Wrong for both, with different values.
        flipped_fields: Count of fields flipped (of any kind) over the cases.
    """

    cases: int
    fields: int
    flipped: FlipShare
    right_to_wrong: FlipShare
    wrong_to_right: FlipShare
    wrong_to_wrong: FlipShare
    flipped_fields: int

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def share_interval(shares: Sequence[float], options: ComparisonOptions) -> Interval | None:
    """The interval of a mean of per-case shares in [0, 1] (in case order) by the options' method:
    the confidence sequence for a sequential run, else the betting interval of a fixed sample."""
    if options.method == "sequential":
        return confidence_sequence(
            shares, confidence=options.confidence, low=0.0, high=1.0, truncation=options.truncation
        )
    return betting_interval(
        shares, confidence=options.confidence, low=0.0, high=1.0, truncation=options.truncation
    )


def _share(shares: Sequence[float], options: ComparisonOptions) -> FlipShare:
    return FlipShare(share=mean(shares), interval=share_interval(shares, options))


def summarize_flips(cases: Sequence[PairedCase], *, options: ComparisonOptions | None = None) -> FlipSummary:
    """Flips of every kind over the paired cases (in case order), each with its interval.

    Args:
        cases: The labeled cases both sides scored, with the variant's agreement per field.
        options: Confidence, interval method and betting truncation (the gates' options; None: the
            defaults, a fixed sample's betting interval).
    """
    options = options or ComparisonOptions()
    counted = [case_flips(c) for c in cases]
    return FlipSummary(
        cases=len(counted),
        fields=sum(c.fields for c in counted),
        flipped=_share([c.share() for c in counted], options),
        right_to_wrong=_share([c.share("right_to_wrong") for c in counted], options),
        wrong_to_right=_share([c.share("wrong_to_right") for c in counted], options),
        wrong_to_wrong=_share([c.share("wrong_to_wrong") for c in counted], options),
        flipped_fields=sum(c.flipped for c in counted),
    )


def flip_status(*, interval: Interval | None, max_share: float) -> Literal["pass", "fail", "undecided"]:
    """Judge a flip gate from the interval of the flip share: "pass" when its upper bound is at most
    `max_share`, "fail" when its lower bound is above it, else "undecided" (also with no interval).

    The one reading of the flip gate: the sequential run stops by it after every round, and
    `decide` judges by it.
    """
    if interval is None:
        return "undecided"
    if interval.high <= max_share:
        return "pass"
    if interval.low > max_share:
        return "fail"
    return "undecided"
