"""A variant's latency against the reference's, paired by case: the median per-case difference with
a distribution-free interval that holds at the small samples latency is measured on.

What the interval covers: the median, over cases like the sampled ones and on the machine as it was
while they ran, of the per-case difference variant minus reference (end-to-end time, time to first
token, generation tokens/s). It is the exact sign-test interval, two order statistics of the
differences: for independent pairs whose difference has a continuous distribution it contains that
median with probability at least the stated confidence at every n, with no assumption of symmetry or
normality (timings are skewed). It is not the difference of the two medians, and it says nothing of
a p95: 12 cases have no order statistic above the 95th percentile to bound it with, so a p95 stays a
descriptive figure. With too few pairs for the confidence (fewer than 6 at 95%) the bounds are None.

Only cases both sides decoded in full and timed are paired (`evaluators.latency.case_latency` leaves
a verified case untimed): a difference between a decoded and a verified case would be a difference
of methods, not of variants.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from scipy.stats import binom

from evaluators.latency import CaseLatency
from evaluators.results import EvaluatorResult

__all__ = [
    "LATENCY_CONFIDENCE",
    "LatencyAgainstReference",
    "PairedMedian",
    "latency_against_reference",
    "median_difference",
]

LATENCY_CONFIDENCE = 0.95
"""The confidence of the paired latency intervals."""


class PairedMedian(EvaluatorResult):
    """The median of paired per-case differences (variant minus reference) with its exact sign-test
    interval; every figure None when not measured (no pairs, or too few for an interval)."""

    pairs: int
    median: float | None = None
    low: float | None = None
    high: float | None = None
    coverage: float | None = None
    """The interval's exact coverage for a continuous difference (at least the confidence asked)."""


class LatencyAgainstReference(EvaluatorResult):
    """A variant's per-case latency against the reference's over the cases both decoded in full and
    timed (`pairs`), each figure variant minus reference: `total_s` (end-to-end seconds), `ttft_s`
    (seconds to the first token), `generation_tokens_per_s` (negative: slower)."""

    pairs: int
    confidence: float
    total_s: PairedMedian
    ttft_s: PairedMedian
    generation_tokens_per_s: PairedMedian


def _excluded_per_side(n: int, confidence: float) -> int | None:
    """How many order statistics the sign-test interval leaves out at each end: the largest k with
    P(Binomial(n, 1/2) <= k) <= (1 - confidence) / 2; None when even k = 0 does not fit."""
    if n == 0:
        return None
    tail = binom.cdf(np.arange(n), n, 0.5)
    fits = np.flatnonzero(tail <= (1 - confidence) / 2)
    return int(fits[-1]) if fits.size else None


def median_difference(
    differences: Sequence[float], *, confidence: float = LATENCY_CONFIDENCE
) -> PairedMedian:
    """The median of paired differences and its exact sign-test (binomial order-statistic) interval.

    Args:
        differences: One difference per pair (variant minus reference), in any order.
        confidence: The interval's nominal confidence, in (0, 1).

    Returns:
        The median and [d_(k+1), d_(n-k)] of the sorted differences, with the interval's exact
        coverage 1 - 2 P(Binomial(n, 1/2) <= k); bounds None with too few pairs for the confidence.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    ordered = np.sort(np.asarray(differences, dtype=float))
    n = int(ordered.size)
    if n == 0:
        return PairedMedian(pairs=0)
    median = float(np.median(ordered))
    k = _excluded_per_side(n, confidence)
    if k is None:
        return PairedMedian(pairs=n, median=median)
    return PairedMedian(
        pairs=n,
        median=median,
        low=float(ordered[k]),
        high=float(ordered[n - 1 - k]),
        coverage=float(1 - 2 * binom.cdf(k, n, 0.5)),
    )


def _differences(
    pairs: Sequence[tuple[CaseLatency, CaseLatency]], figure: Callable[[CaseLatency], float | None]
) -> list[float]:
    found = [(figure(ref), figure(own)) for ref, own in pairs]
    return [own - ref for ref, own in found if ref is not None and own is not None]


def latency_against_reference(
    *,
    reference: Mapping[str, CaseLatency],
    variant: Mapping[str, CaseLatency],
    confidence: float = LATENCY_CONFIDENCE,
) -> LatencyAgainstReference:
    """The variant's per-case latency minus the reference's on the same cases, with intervals.

    Args:
        reference: The reference's latency per case id.
        variant: The variant's latency per case id.
        confidence: The intervals' nominal confidence.

    Returns:
        The paired median differences over the cases both timed (a case not decoded in full has no
        `total_s`, so it is not paired); a figure one side did not measure on a case leaves that case
        out of that figure only.
    """
    pairs = [
        (ref, variant[case_id])
        for case_id, ref in reference.items()
        if case_id in variant and ref.total_s is not None and variant[case_id].total_s is not None
    ]
    return LatencyAgainstReference(
        pairs=len(pairs),
        confidence=confidence,
        total_s=median_difference(_differences(pairs, lambda c: c.total_s), confidence=confidence),
        ttft_s=median_difference(_differences(pairs, lambda c: c.ttft_s), confidence=confidence),
        generation_tokens_per_s=median_difference(
            _differences(pairs, lambda c: c.generation_tokens_per_s), confidence=confidence
        ),
    )
