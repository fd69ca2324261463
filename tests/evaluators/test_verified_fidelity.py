"""Token fidelity over the positions verification read: per-case positions from the attempts, pooled
figures, and intervals over cases (exact sign-test for the median per-case KLD, betting interval for
the mean per-case top-1 agreement)."""

from __future__ import annotations

from typing import Any

import pytest

from evaluators.betting import betting_interval
from evaluators.verified_fidelity import case_fidelity, summarize_verified_fidelity


def _attempt(kld: list[float], top1: list[bool], kinds: list[str] | None = None) -> dict[str, Any]:
    return {"fidelity": {"kld": kld, "top1": top1, "delta_p": [-k for k in kld], "kinds": kinds}}


def test_a_cases_positions_join_its_calls_and_a_call_without_them_adds_nothing():
    case = [
        _attempt([0.1, 0.2], [True, False], ["structural", "value"]),
        {"text": "x"},
        _attempt([0.3], [True], ["value"]),
    ]
    fidelity = case_fidelity(case)
    assert fidelity is not None
    assert (fidelity.kld, fidelity.top1, fidelity.kinds) == ((0.1, 0.2, 0.3), (True, False, True),
                                                             ("structural", "value", "value"))  # fmt: skip
    assert case_fidelity([{"text": "x"}]) is None
    mixed = case_fidelity([_attempt([0.1], [True], None), _attempt([0.1], [True], ["value"])])
    assert mixed is not None
    assert mixed.kinds is None


def test_intervals_over_cases_are_the_order_statistics_and_the_betting_interval():
    means = [0.001 * (i + 1) for i in range(20)]  # per-case mean KLD 0.001 .. 0.020
    cases = [[_attempt([m, m], [True, i % 4 != 0])] for i, m in enumerate(means)]
    summary = summarize_verified_fidelity(cases, given=23)
    assert summary is not None
    assert (summary.cases, summary.positions, summary.unmeasured_cases) == (20, 40, 3)
    assert summary.kld_mean == pytest.approx(sum(means) / 20)
    assert summary.case_kld_median == pytest.approx(0.0105)
    # n = 20: P(Binomial(20, 1/2) <= 5) = 0.0207 <= 0.025 < P(<= 6): the 6th and 15th of the sorted
    assert summary.case_kld_low == pytest.approx(0.006)
    assert summary.case_kld_high == pytest.approx(0.015)
    shares = [0.5 if i % 4 == 0 else 1.0 for i in range(20)]
    assert summary.case_top1_mean == pytest.approx(sum(shares) / 20)
    expected = betting_interval(shares, confidence=0.95, low=0.0, high=1.0)
    assert expected is not None
    assert (summary.case_top1_low, summary.case_top1_high) == (expected.low, expected.high)
    assert expected.low < sum(shares) / 20 <= expected.high
    assert summary.top1_agreement == pytest.approx(35 / 40)


def test_no_positions_no_figures():
    assert summarize_verified_fidelity([[{"text": "x"}], []], given=1) is None
