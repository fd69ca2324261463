"""Statistics for comparing a variant with the reference on the same cases.

- `bootstrap_interval`: percentile bootstrap confidence interval of a mean. Given
  per-case differences (variant minus reference) it is the paired bootstrap: cases are
  resampled, each keeping both of its scores, so case difficulty cancels out.
- `mcnemar_exact`: the exact (binomial) McNemar test on paired right/wrong outcomes; only
  the discordant cases count.
- `proportion_interval`: Wilson score interval of a proportion (format validity, error
  rate), from scipy.
- `equivalence_verdict`: "equivalent", "worse", "better" or "inconclusive" from a delta's
  confidence interval and a margin. Too few cases is always inconclusive: a small sample
  never makes two variants equal.

Resampling uses a seeded generator, so the same records give the same intervals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

Verdict = Literal["equivalent", "worse", "better", "inconclusive"]

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0
_CHUNK = 1_000


@dataclass(frozen=True, kw_only=True)
class Interval:
    """A two-sided confidence interval.

    Attributes:
        low: Lower bound.
        high: Upper bound.
        confidence: Coverage, e.g. 0.95.
        method: How it was computed.
    """

    low: float
    high: float
    confidence: float
    method: str


def bootstrap_interval(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Interval | None:
    """Percentile bootstrap interval of the mean of `values`.

    Args:
        values: One value per case (for a paired comparison: the per-case difference).
        confidence: Coverage of the interval.
        resamples: Number of bootstrap resamples.
        seed: Seed of the resampling generator.

    Returns:
        The interval, or None for no values.
    """
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return None
    rng = np.random.default_rng(seed)
    means = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, _CHUNK):  # bounded memory for large datasets
        stop = min(start + _CHUNK, resamples)
        picks = rng.integers(0, data.size, size=(stop - start, data.size))
        means[start:stop] = data[picks].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    method = f"percentile bootstrap, {resamples} resamples, seed {seed}"
    return Interval(low=float(low), high=float(high), confidence=confidence, method=method)


def mcnemar_exact(*, reference_only: int, variant_only: int) -> float:
    """Two-sided p-value of the exact McNemar test.

    Args:
        reference_only: Cases the reference got right and the variant wrong.
        variant_only: Cases the variant got right and the reference wrong.

    Returns:
        The p-value; 1.0 when there are no discordant cases.
    """
    if reference_only < 0 or variant_only < 0:
        raise ValueError("discordant counts cannot be negative")
    discordant = reference_only + variant_only
    if discordant == 0:
        return 1.0
    tail = stats.binom.cdf(min(reference_only, variant_only), discordant, 0.5)
    return float(min(1.0, 2 * tail))


def proportion_interval(successes: int, trials: int, *, confidence: float = 0.95) -> Interval | None:
    """Wilson score interval of a proportion; None for no trials."""
    if trials == 0:
        return None
    ci = stats.binomtest(successes, trials).proportion_ci(confidence_level=confidence, method="wilson")
    return Interval(low=float(ci.low), high=float(ci.high), confidence=confidence, method="Wilson score")


def equivalence_verdict(
    *, interval: Interval | None, margin: float, cases: int, min_cases: int
) -> tuple[Verdict, str]:
    """Classify a delta (variant minus reference) against an equivalence margin.

    Args:
        interval: Confidence interval of the delta; None when nothing was paired.
        margin: The equivalence margin, as a fraction (0.02 is 2 points).
        cases: Number of paired cases behind the interval.
        min_cases: Fewer paired cases than this is inconclusive, whatever the interval.

    Returns:
        The verdict and a sentence saying why.
    """
    if interval is None or cases < min_cases:
        return "inconclusive", f"{cases} paired case(s), fewer than the {min_cases} required"
    span = f"CI [{interval.low * 100:+.1f}, {interval.high * 100:+.1f}] points"
    bound = f"{margin * 100:.1f}"
    if -margin < interval.low and interval.high < margin:
        return "equivalent", f"{span} lies within ±{bound}"
    if interval.high < -margin:
        return "worse", f"{span} lies below -{bound}"
    if interval.low > margin:
        return "better", f"{span} lies above +{bound}"
    return "inconclusive", f"{span} straddles the ±{bound} margin"
