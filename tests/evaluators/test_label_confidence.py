"""The gold label's probability moved by a variant against the reference, paired per case and
split by the reference's confidence; every figure counted by hand."""

from __future__ import annotations

import pytest

from evaluators.label_confidence import UNSURE_BELOW, gold_probability_shift


def test_the_shift_pairs_the_cases_both_scored_and_splits_them_at_one_half() -> None:
    # pairs: cases 1, 2, 3 and 5 (case 4: the reference gave none; case 6: the variant gave none)
    # changes: 0.6 - 0.8 = -0.2, 0.35 - 0.3 = +0.05, 0.6 - 0.6 = 0, 0.4 - 0.5 = -0.1: mean -0.25 / 4
    # unsure (reference < 0.5): case 2 only, +0.05; sure: cases 1, 3 and 5 (0.5 is sure): -0.3 / 3
    shift = gold_probability_shift(
        reference=[0.8, 0.3, 0.6, None, 0.5, 0.2],
        variant=[0.6, 0.35, 0.6, 0.9, 0.4, None],
    )
    assert UNSURE_BELOW == 0.5
    assert shift.gold_probability_pairs == 4
    assert shift.gold_probability_change == pytest.approx(-0.0625)
    assert shift.gold_probability_change_unsure == pytest.approx(0.05)
    assert shift.gold_probability_change_sure == pytest.approx(-0.1)
    assert shift.reference_unsure_cases == 1


def test_a_side_without_pairs_is_not_measured_never_zero() -> None:
    nothing = gold_probability_shift(reference=[None, 0.7], variant=[0.4, None])
    assert all(value is None for _, value in nothing)
    only_sure = gold_probability_shift(reference=[0.9], variant=[0.7])
    assert only_sure.gold_probability_change_sure == pytest.approx(-0.2)
    assert only_sure.gold_probability_change_unsure is None  # no unsure case: not 0
    assert only_sure.reference_unsure_cases == 0


def test_unequal_lengths_and_probabilities_outside_0_1_are_refused() -> None:
    with pytest.raises(ValueError, match="2 reference probabilities but 1"):
        gold_probability_shift(reference=[0.5, 0.5], variant=[0.5])
    with pytest.raises(ValueError, match="outside"):
        gold_probability_shift(reference=[1.2], variant=[0.5])
