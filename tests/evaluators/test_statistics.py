"""Statistical functions against hand-computed values and against scipy / statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evaluators.statistics import (
    Interval,
    bootstrap_interval,
    equivalence_verdict,
    mcnemar_exact,
    proportion_interval,
)


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (0, 0, 1.0),
        (1, 6, 2 * (1 + 7) / 2**7),  # 2 * P(X <= 1), X ~ Bin(7, 1/2) = 0.125
        (6, 1, 0.125),
        (0, 5, 2 / 2**5),  # 0.0625
        (3, 3, 1.0),
        (2, 10, 2 * (1 + 12 + 66) / 2**12),
    ],
)
def test_mcnemar_exact_matches_hand_computation(b: int, c: int, expected: float) -> None:
    assert mcnemar_exact(reference_only=b, variant_only=c) == pytest.approx(expected)


@pytest.mark.parametrize(("b", "c"), [(1, 6), (4, 9), (0, 3), (12, 12), (20, 7), (0, 1)])
def test_mcnemar_exact_matches_statsmodels(b: int, c: int) -> None:
    contingency = pytest.importorskip("statsmodels.stats.contingency_tables")
    table = [[10, b], [c, 5]]
    expected = contingency.mcnemar(table, exact=True).pvalue
    assert mcnemar_exact(reference_only=b, variant_only=c) == pytest.approx(expected)


def test_mcnemar_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="negative"):
        mcnemar_exact(reference_only=-1, variant_only=2)


def test_bootstrap_of_constant_values_is_that_constant() -> None:
    interval = bootstrap_interval([0.25] * 12)
    assert interval is not None
    assert interval.low == pytest.approx(0.25)
    assert interval.high == pytest.approx(0.25)


def test_bootstrap_of_nothing_is_none() -> None:
    assert bootstrap_interval([]) is None


def test_bootstrap_is_reproducible_and_seeded() -> None:
    values = list(np.random.default_rng(1).normal(size=40))
    assert bootstrap_interval(values, seed=3) == bootstrap_interval(values, seed=3)
    assert bootstrap_interval(values, seed=3) != bootstrap_interval(values, seed=4)


def test_bootstrap_matches_scipy_percentile_bootstrap() -> None:
    rng = np.random.default_rng(7)
    reference = rng.integers(0, 2, size=60).astype(float)
    variant = np.where(rng.random(60) < 0.15, 1 - reference, reference)
    deltas = variant - reference
    ours = bootstrap_interval(list(deltas), resamples=20_000, seed=0)
    theirs = stats.bootstrap(
        (reference, variant),
        lambda r, v, axis: np.mean(v - r, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=20_000,
        method="percentile",
        rng=np.random.default_rng(1),
    ).confidence_interval
    assert ours is not None
    assert ours.low == pytest.approx(theirs.low, abs=0.01)
    assert ours.high == pytest.approx(theirs.high, abs=0.01)


def test_bootstrap_interval_is_close_to_the_normal_approximation_for_a_large_sample() -> None:
    values = np.random.default_rng(2).normal(loc=0.1, scale=1.0, size=2000)
    interval = bootstrap_interval(list(values), resamples=4000)
    half_width = 1.96 * values.std(ddof=1) / math.sqrt(values.size)
    assert interval is not None
    assert interval.low == pytest.approx(values.mean() - half_width, abs=0.01)
    assert interval.high == pytest.approx(values.mean() + half_width, abs=0.01)


def test_wilson_interval_matches_the_formula() -> None:
    k, n, z = 9, 10, stats.norm.ppf(0.975)
    p = k / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    interval = proportion_interval(k, n)
    assert interval is not None
    assert interval.low == pytest.approx(centre - half)
    assert interval.high == pytest.approx(centre + half)
    assert proportion_interval(0, 0) is None


def _ci(low: float, high: float) -> Interval:
    return Interval(low=low, high=high, confidence=0.95, method="test")


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (-0.01, 0.015, "equivalent"),
        (0.0, 0.0, "equivalent"),
        (-0.09, -0.03, "worse"),
        (0.03, 0.08, "better"),
        (-0.05, 0.0, "inconclusive"),  # straddles -2 points
        (-0.01, 0.04, "inconclusive"),  # straddles +2 points
        (-0.10, 0.10, "inconclusive"),
    ],
)
def test_equivalence_verdict(low: float, high: float, verdict: str) -> None:
    found, reason = equivalence_verdict(interval=_ci(low, high), margin=0.02, cases=50, min_cases=10)
    assert found == verdict
    assert "points" in reason


def test_a_small_sample_is_never_equivalent() -> None:
    verdict, reason = equivalence_verdict(interval=_ci(0.0, 0.0), margin=0.02, cases=4, min_cases=10)
    assert verdict == "inconclusive"
    assert "4 paired case(s)" in reason
    assert equivalence_verdict(interval=None, margin=0.02, cases=0, min_cases=1)[0] == "inconclusive"
