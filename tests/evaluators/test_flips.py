"""Flips: each field of a paired case counted by kind, summarized with intervals valid at any n, and
the flip gate's reading (`evaluators.flips`)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.betting import betting_interval, confidence_sequence, confidence_sequence_path
from evaluators.comparison import ComparisonOptions, PairedCase
from evaluators.flips import case_flips, flip_status, summarize_flips
from evaluators.sequential import sequential_drop_status
from evaluators.statistics import Interval


def _case(
    reference: dict[str, float], variant: dict[str, float], agreement: dict[str, float] | None
) -> PairedCase:
    return PairedCase(case_id="c", reference=reference, variant=variant, agreement=agreement)


def test_each_field_is_counted_by_its_kind() -> None:
    counted = case_flips(
        _case(
            reference={"a": 1.0, "b": 0.0, "c": 0.0, "d": 1.0, "e": 0.0},
            variant={"a": 0.0, "b": 1.0, "c": 0.0, "d": 1.0, "e": 0.5},
            agreement={"a": 0.0, "b": 0.0, "c": 0.0, "d": 1.0, "e": 1.0},
        )
    )
    # a: right to wrong; b: wrong to right; c: both wrong, different values; d: both right;
    # e: both wrong (0.5 is not right) with the same value
    assert (counted.right_to_wrong, counted.wrong_to_right, counted.wrong_to_wrong) == (1, 1, 1)
    assert counted.fields == 5
    assert counted.share() == pytest.approx(3 / 5)
    assert counted.share("wrong_to_wrong") == pytest.approx(1 / 5)


def test_a_wrong_field_with_no_reference_record_is_not_counted_as_a_flip() -> None:
    counted = case_flips(_case(reference={"a": 0.0, "b": 1.0}, variant={"a": 0.0, "b": 0.0}, agreement=None))
    assert (counted.right_to_wrong, counted.wrong_to_right, counted.wrong_to_wrong) == (1, 0, 0)


def _weak_reference(n: int) -> list[PairedCase]:
    """A classification whose reference is right on 1 case in 8 and a variant that changes 7 answers
    in 8 to other wrong labels, and keeps the reference's right ones: no accuracy lost."""
    cases = []
    for i in range(n):
        right = i % 8 == 0
        cases.append(
            _case(
                reference={"label": float(right)},
                variant={"label": float(right)},
                agreement={"label": 1.0 if right else 0.0},
            )
        )
    return cases


def test_a_variant_that_changes_most_answers_of_a_weak_reference_fails_the_flip_gate_only() -> None:
    cases = _weak_reference(96)
    options = ComparisonOptions(method="sequential")
    flips = summarize_flips(cases, options=options)
    assert flips.cases == 96
    assert flips.fields == 96
    assert flips.flipped_fields == 84
    assert flips.flipped.share == pytest.approx(84 / 96)
    assert flips.wrong_to_wrong.share == pytest.approx(84 / 96)
    assert flips.right_to_wrong.share == 0.0
    assert flips.wrong_to_right.share == 0.0
    interval = flips.flipped.interval
    assert interval is not None
    assert "confidence sequence" in interval.method
    assert 0.25 < interval.low < 84 / 96 < interval.high
    assert flip_status(interval=interval, max_share=0.25) == "fail"
    # the accuracy gate sees no drop at all, and passes it
    assert sequential_drop_status([0.0] * 96, max_drop=0.05).status == "pass"


def test_the_interval_follows_the_method() -> None:
    cases = _weak_reference(40)
    fixed = summarize_flips(cases, options=ComparisonOptions(method="betting")).flipped.interval
    sequence = summarize_flips(cases, options=ComparisonOptions(method="sequential")).flipped.interval
    assert fixed is not None
    assert sequence is not None
    shares = [case_flips(c).share() for c in cases]
    assert fixed == betting_interval(shares, low=0.0, high=1.0)
    assert sequence == confidence_sequence(shares, low=0.0, high=1.0)
    assert fixed != sequence


def test_no_cases_have_no_figure() -> None:
    flips = summarize_flips([])
    assert flips.cases == 0
    assert flips.flipped.share is None
    assert flips.flipped.interval is None


@pytest.mark.parametrize(
    ("low", "high", "status"),
    [(0.01, 0.25, "pass"), (0.26, 0.9, "fail"), (0.2, 0.3, "undecided"), (0.25, 0.3, "undecided")],
)
def test_flip_status_reads_the_interval_against_the_threshold(low: float, high: float, status: str) -> None:
    interval = Interval(low=low, high=high, confidence=0.95, method="test")
    assert flip_status(interval=interval, max_share=0.25) == status
    assert flip_status(interval=None, max_share=0.25) == "undecided"


def test_a_variant_whose_true_flip_share_is_the_threshold_is_rarely_passed_when_checked_every_round() -> None:
    """Simulated: fields flipped with probability exactly 25%, 8 fields a case, the gate checked every 12
    cases up to 240; the flip gate may pass at most 2.5% of runs (the upper end of a two-sided 95%
    sequence), plus three standard errors."""
    rng = np.random.default_rng(45)
    runs, passed = 400, 0
    for _ in range(runs):
        shares = (rng.random((240, 8)) < 0.25).mean(axis=1).tolist()
        path = confidence_sequence_path(shares, low=0.0, high=1.0)
        if any(flip_status(interval=path[end - 1], max_share=0.25) == "pass" for end in range(12, 241, 12)):
            passed += 1
    assert passed / runs <= 0.025 + 3 * (0.025 * 0.975 / runs) ** 0.5
