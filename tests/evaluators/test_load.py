import pytest

from evaluators.load import LoadRequest, summarize_load


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
