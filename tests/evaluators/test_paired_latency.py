"""A variant's latency against the reference's, paired by case: median differences with the exact
sign-test interval."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.latency import CaseLatency, case_latency
from evaluators.paired_latency import latency_against_reference, median_difference


def _timed(total: float, *, ttft: float | None = 0.2, rate: float | None = 15.0) -> CaseLatency:
    return CaseLatency(
        ttft_s=ttft, total_s=total, input_tokens=800, output_tokens=60,
        prompt_tokens_per_s=None, generation_tokens_per_s=rate,
    )  # fmt: skip


def test_median_and_sign_test_bounds_on_twelve_pairs():
    """12 pairs: the interval is the 3rd and 10th smallest differences, P(B(12, 1/2) <= 2) = 79/4096
    in each tail, so its exact coverage is 1 - 158/4096."""
    differences = [1.2, 0.1, 0.5, 0.9, 0.3, 1.1, 0.2, 0.7, 0.4, 1.0, 0.6, 0.8]
    result = median_difference(differences)
    assert result.pairs == 12
    assert result.median == pytest.approx(0.65)
    assert [result.low, result.high] == pytest.approx([0.3, 1.0])
    assert result.coverage == pytest.approx(1 - 158 / 4096)


def test_too_few_pairs_have_no_bounds():
    """Five pairs cannot reach 95% (2 / 2^5 > 0.05): the median stays, the bounds are None, not 0."""
    five = median_difference([0.1, 0.2, 0.3, 0.4, 0.5])
    assert five.median == pytest.approx(0.3)
    assert (five.low, five.high, five.coverage) == (None, None, None)
    six = median_difference([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    assert [six.low, six.high] == pytest.approx([0.1, 0.6])
    none = median_difference([])
    assert (none.pairs, none.median, none.low) == (0, None, None)


def test_bad_confidence_is_refused():
    with pytest.raises(ValueError, match="confidence must be in"):
        median_difference([0.1], confidence=1.0)


@pytest.mark.parametrize("n", [6, 12, 30])
def test_the_interval_covers_the_median_of_a_skewed_difference(n):
    """Coverage by simulation: differences of two lognormal timings (skewed, not symmetric); the
    interval holds the true median in at least 95% of samples, and not far above its exact level."""
    rng = np.random.default_rng(45)
    population = rng.lognormal(0.3, 0.6, 400_000) - rng.lognormal(0.0, 0.4, 400_000)
    true_median = float(np.median(population))
    covered = []
    for _ in range(2000):
        result = median_difference(list(rng.choice(population, size=n)))
        assert result.low is not None
        assert result.high is not None
        covered.append(result.low <= true_median <= result.high)
    assert np.mean(covered) >= 0.95 - 0.01  # 0.01: the simulation's own error at 2,000 samples
    assert result.coverage is not None
    assert np.mean(covered) <= result.coverage + 0.015


def test_pairs_over_the_cases_both_timed():
    reference = {f"c{i}": _timed(2.0 + i) for i in range(12)}
    variant = {f"c{i}": _timed(2.0 + i + 0.1 * (i + 1), ttft=0.3, rate=10.0 + i) for i in range(12)}
    variant["only-variant"] = _timed(1.0)
    result = latency_against_reference(reference=reference, variant=variant)
    assert result.pairs == 12
    assert result.total_s.median == pytest.approx(0.65)
    assert [result.total_s.low, result.total_s.high] == pytest.approx([0.3, 1.0])
    assert result.ttft_s.median == pytest.approx(0.1)
    assert result.generation_tokens_per_s.median == pytest.approx(-15 + 10 + 5.5)


def test_a_case_not_decoded_in_full_is_not_paired():
    """A verified case (or one verified then decoded) has no latency, so it is left out of the pairs."""
    decoded = {"ttft_s": 0.2, "total_s": 4.0, "input_tokens": 800, "output_tokens": 61}
    verified = {**decoded, "obtained": "verified"}
    partly = {**decoded, "obtained": "verified_then_decoded"}
    reference = {"a": case_latency([decoded]), "b": case_latency([decoded]), "c": case_latency([decoded])}
    variant = {
        "a": case_latency([{**decoded, "total_s": 5.0}]),
        "b": case_latency([verified]),
        "c": case_latency([decoded, partly]),
    }
    result = latency_against_reference(reference=reference, variant=variant)
    assert result.pairs == 1
    assert result.total_s.median == pytest.approx(1.0)
    assert result.total_s.low is None


def test_a_figure_one_side_did_not_measure_leaves_only_that_figure():
    reference = {"a": _timed(2.0, ttft=None), "b": _timed(3.0)}
    variant = {"a": _timed(2.5), "b": _timed(3.5, rate=None)}
    result = latency_against_reference(reference=reference, variant=variant)
    assert (result.pairs, result.total_s.pairs, result.ttft_s.pairs) == (2, 2, 1)
    assert result.generation_tokens_per_s.pairs == 1
