"""The noise floor's figures: the reference's rerun against its first answers."""

from __future__ import annotations

import pytest

from evaluators.fields import FieldAccuracy, FieldScore
from evaluators.noise_floor import NoiseFloorCase, fields_changed, summarize_noise_floor

RECORD = {"a": 1, "b": 2, "c": 3, "d": 4}


def _agreement(*scores: float) -> FieldAccuracy:
    names = "abcd"
    return FieldAccuracy(
        fields={
            n: FieldScore(field=n, score=s, outcome="correct" if s == 1 else "wrong")
            for n, s in zip(names, scores, strict=False)
        }
    )


def test_fields_changed_is_the_share_below_full_agreement():
    assert fields_changed(_agreement(1, 0, 0.5, 1)) == 0.5
    assert fields_changed(FieldAccuracy()) is None


def test_one_case_that_changed_one_field_of_four():
    cases = [
        NoiseFloorCase(first=RECORD, rerun=RECORD, agreement=_agreement(1, 1, 1, 1)),
        NoiseFloorCase(first=RECORD, rerun={**RECORD, "d": 5}, agreement=_agreement(1, 1, 1, 0)),
        NoiseFloorCase(first=None, rerun=None, agreement=None),  # neither valid: the same outcome
    ]
    floor = summarize_noise_floor(cases)
    assert (floor.cases, floor.identical, floor.agreement_cases) == (3, 2, 2)
    assert floor.identical_share == pytest.approx(2 / 3)
    assert floor.agreement == pytest.approx(7 / 8)
    assert floor.fields_changed_share == pytest.approx(0.125)
    assert floor.kld_mean is None  # not measured here


def test_a_rerun_that_lost_its_record_is_not_identical():
    case = NoiseFloorCase(first=RECORD, rerun=None, agreement=_agreement(0, 0, 0, 0))
    floor = summarize_noise_floor([case])
    assert (floor.identical, floor.agreement, floor.fields_changed_share) == (0, 0.0, 1.0)


def test_no_case_has_no_figures():
    floor = summarize_noise_floor([])
    assert (floor.cases, floor.identical_share, floor.agreement, floor.fields_changed_share) == (
        0,
        None,
        None,
        None,
    )
