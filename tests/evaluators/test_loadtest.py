import math

import pytest

from evaluators.loadtest import LoadRequest, goodput_interval, summarize_load


def request(*, ttft=0.1, total=1.0, tokens=10, gap=0.1, kind=None, valid=True):
    return LoadRequest(
        level="peak", slot=0, case_id="c", started_s=0.0, ttft_s=ttft, total_s=total,
        output_tokens=tokens, inter_token_s=gap, valid=valid, error_kind=kind,
    )  # fmt: skip


def test_percentiles_rates_and_errors_by_kind():
    requests = [
        request(ttft=0.1, total=1.0, tokens=10, gap=0.1),
        request(ttft=0.3, total=2.0, tokens=21, gap=0.05),
        request(ttft=0.2, total=1.0, tokens=5, gap=0.2, kind="invalid_output", valid=False),
        request(ttft=None, total=0.01, tokens=None, gap=None, kind="busy", valid=None),
        request(ttft=None, total=0.01, tokens=None, gap=None, kind="busy", valid=None),
        request(ttft=None, total=5.0, tokens=None, gap=None, kind="timeout", valid=None),
    ]
    stats = summarize_load(requests=requests, wall_s=4.0)
    assert (stats.requests, stats.answered, stats.errors) == (6, 3, 4)
    assert stats.errors_by_kind == {"busy": 2, "invalid_output": 1, "timeout": 1}
    assert stats.ttft_s_p50 == pytest.approx(0.2)
    assert stats.ttft_s_p99 == pytest.approx(0.298)
    # token-weighted: 9 gaps of 0.1, 20 of 0.05, 4 of 0.2
    assert stats.inter_token_s_mean == pytest.approx((0.9 + 1.0 + 0.8) / 33)
    assert stats.request_tokens_per_s_p50 == pytest.approx(10.0)  # of 10, 10.5 and 5
    assert stats.aggregate_tokens_per_s == pytest.approx(36 / 4.0)
    assert stats.requests_per_s == pytest.approx(3 / 4.0)


def test_nothing_measured_is_none_not_zero():
    stats = summarize_load(
        requests=[request(ttft=None, tokens=None, gap=None, kind="busy", valid=None)], wall_s=0.5
    )
    assert stats.errors_by_kind == {"busy": 1}
    for name in ("ttft_s_p50", "ttft_s_p95", "ttft_s_p99", "inter_token_s_mean", "request_tokens_per_s_p50",
                 "aggregate_tokens_per_s", "requests_per_s"):  # fmt: skip
        assert getattr(stats, name) is None, name
    empty = summarize_load(requests=[], wall_s=0.0)
    assert (empty.requests, empty.wall_s, empty.errors_by_kind, empty.requests_per_s) == (0, None, {}, None)


def _garwood(count, confidence=0.95):
    """The exact Poisson interval of a count, solved from the Poisson distribution itself (not chi2)."""
    from scipy.optimize import brentq
    from scipy.stats import poisson

    tail = (1 - confidence) / 2
    low = 0.0 if count == 0 else brentq(lambda mu: poisson.sf(count - 1, mu) - tail, 1e-9, 10 * count + 10)
    high = brentq(lambda mu: poisson.cdf(count, mu) - tail, 1e-9, 10 * count + 10)
    return low, high


def ten_requests():
    """6 of 10 requests meet TTFT <= 0.5 s and mean ITL <= 0.05 s and are valid."""
    within = [request(ttft=0.1 * (i + 1), gap=0.01 * (i + 1)) for i in range(5)]  # TTFT to 0.5, ITL to 0.05
    within.append(request(ttft=0.2, tokens=1, gap=None))  # one token: no gap, meets any gap target
    return [
        *within,
        request(ttft=0.6, gap=0.01),  # first token late
        request(ttft=0.1, gap=0.06),  # tokens too slow
        request(ttft=0.1, gap=0.01, kind="invalid_output", valid=False),  # fast but invalid
        request(ttft=None, total=0.01, tokens=None, gap=None, kind="busy", valid=None),
    ]


def test_goodput_counts_valid_requests_within_both_targets_over_wall_time():
    targets = {"ttft_target_s": 0.5, "itl_target_s": 0.05}
    stats = summarize_load(requests=ten_requests(), wall_s=4.0, **targets, poisson=True)
    assert stats.within_targets == 6
    assert stats.goodput_rps == pytest.approx(1.5)
    low, high = _garwood(6)
    assert (low, high) == pytest.approx((2.2018, 13.0594), abs=1e-3)  # the textbook table's 95% limits for 6
    assert stats.goodput_rps_low == pytest.approx(low / 4.0, rel=1e-6)
    assert stats.goodput_rps_high == pytest.approx(high / 4.0, rel=1e-6)


def test_goodput_with_one_target_constrains_only_that():
    ttft_only = summarize_load(requests=ten_requests(), wall_s=4.0, ttft_target_s=0.5)
    assert ttft_only.within_targets == 7  # the slow-token one now counts
    itl_only = summarize_load(requests=ten_requests(), wall_s=2.0, itl_target_s=0.05)
    assert itl_only.within_targets == 7  # the late-first-token one now counts
    assert itl_only.goodput_rps == pytest.approx(3.5)


def test_a_closed_level_has_goodput_without_an_interval():
    stats = summarize_load(requests=ten_requests(), wall_s=4.0, ttft_target_s=0.5, itl_target_s=0.05)
    assert stats.goodput_rps == pytest.approx(1.5)
    assert (stats.goodput_rps_low, stats.goodput_rps_high) == (None, None)


def test_goodput_unmeasured_is_none_and_none_within_is_zero_with_an_interval():
    no_target = summarize_load(requests=ten_requests(), wall_s=4.0, poisson=True)
    nothing_sent = summarize_load(requests=[], wall_s=1.0, ttft_target_s=0.5, poisson=True)
    for stats in (no_target, nothing_sent):
        assert (stats.within_targets, stats.goodput_rps, stats.goodput_rps_low, stats.goodput_rps_high) == (
            None, None, None, None,
        )  # fmt: skip
    late = summarize_load(requests=ten_requests(), wall_s=2.0, ttft_target_s=0.01, poisson=True)
    assert (late.within_targets, late.goodput_rps, late.goodput_rps_low) == (0, 0.0, 0.0)
    assert late.goodput_rps_high == pytest.approx(_garwood(0)[1] / 2.0)  # -ln(0.025) / 2 s
    assert late.goodput_rps_high == pytest.approx(-math.log(0.025) / 2.0)


def test_goodput_interval_covers_a_thinned_poisson_count():
    """Coverage by simulation: Poisson arrivals at 3/s for 5 s, each within targets with p = 0.4."""
    import numpy as np

    rng = np.random.default_rng(7)
    true_goodput = 3 * 0.4
    counts = rng.binomial(rng.poisson(3 * 5.0, size=4000), 0.4)
    covered = [low <= true_goodput <= high for low, high in (goodput_interval(int(k), 5.0) for k in counts)]
    assert np.mean(covered) >= 0.95  # exact: at least nominal, up to Monte Carlo error of ~0.0035
