"""The sequential gates together (overall and per slice), and the forecast of an open gate."""

from __future__ import annotations

import pytest

from evaluators.betting import confidence_sequence_path
from evaluators.sequential import DropGates, Forecast, forecast_settlement, gates_status

GATES = DropGates(max_drop=0.05, max_slice_drop=0.10, min_slice_cases=20)


def test_identical_outputs_pass_once_the_overall_sequence_clears_the_threshold() -> None:
    # every difference 0: the lower bound reaches -5 points after 80 cases
    tags = [("lang:en",)] * 80
    assert gates_status([0.0] * 79, tags[:79], GATES) == "undecided"
    assert gates_status([0.0] * 80, tags, GATES) == "pass"


def test_a_slice_is_gated_once_it_has_enough_cases_and_can_fail_alone() -> None:
    # 100 identical cases, then a slice of 30 whose every case loses a whole case: the overall
    # drop is 23 points and fails too; a slice of 10 such cases alone is not gated yet
    base = [0.0] * 100
    tags = [("lang:en",)] * 100
    assert gates_status(base + [-1.0] * 10, tags + [("lang:en", "dates")] * 10, GATES) == "pass"
    only_slice = DropGates(max_drop=None, max_slice_drop=0.10, min_slice_cases=20)
    assert gates_status(base + [-1.0] * 30, tags + [("lang:en", "dates")] * 30, only_slice) == "fail"


def test_no_gate_or_no_case_is_undecided() -> None:
    assert gates_status([], [], GATES) == "undecided"
    none = DropGates(max_drop=None, max_slice_drop=None)
    assert gates_status([0.0] * 200, [()] * 200, none) == "undecided"


def test_the_gates_status_agrees_with_the_sequence_path() -> None:
    values = [0.0, -0.125, 0.0, 0.125] * 40
    path = confidence_sequence_path(values)
    for n in (12, 60, 120, 160):
        expected = "pass" if path[n - 1].low >= -0.05 else "fail" if path[n - 1].high < -0.05 else "undecided"
        overall = DropGates(max_drop=0.05)
        assert gates_status(values[:n], [()] * n, overall) == expected


def test_forecast_of_identical_outputs_is_exact() -> None:
    """36 identical cases: every resample is 0s, which pass after 80 cases, so at the round end of
    84: 48 more, in every resample."""
    forecast = forecast_settlement([0.0] * 36, [("lang:en",)] * 36, GATES, step=12)
    assert forecast == Forecast(
        cases=36,
        simulations=200,
        horizon=2000,
        settled_share=1.0,
        pass_share=1.0,
        median_more=48,
        low_more=48,
        high_more=48,
    )


def test_forecast_of_a_broken_variant_says_it_will_fail_soon() -> None:
    values = [-0.25, -0.125, -0.375, 0.0, -0.125, -0.25] * 2
    forecast = forecast_settlement(values, [()] * 12, DropGates(max_drop=0.05), step=12)
    assert forecast is not None
    assert forecast.pass_share == 0.0
    assert forecast.settled_share == 1.0
    assert forecast.median_more is not None
    assert forecast.median_more <= 48


def test_forecast_at_the_threshold_does_not_settle_within_a_short_horizon() -> None:
    values = [0.0] * 18 + [-1.0]  # a drop of 5.3 points: close to the threshold
    forecast = forecast_settlement(values, [()] * 19, DropGates(max_drop=0.05), step=12, horizon=120)
    assert forecast is not None
    assert forecast.median_more is None
    assert forecast.settled_share < 0.5


def test_forecast_is_reproducible_and_none_without_cases() -> None:
    values = [0.0, 0.0, -0.125, 0.125, 0.0, -0.25] * 4
    tags = [("lang:en",)] * 24
    first = forecast_settlement(values, tags, GATES, step=12)
    assert first == forecast_settlement(values, tags, GATES, step=12)
    assert forecast_settlement([], [], GATES, step=12) is None


@pytest.mark.parametrize("step", [5, 12])
def test_forecast_counts_cases_to_a_round_end(step: int) -> None:
    forecast = forecast_settlement([0.0] * 10, [()] * 10, DropGates(max_drop=0.05), step=step)
    assert forecast is not None
    assert forecast.median_more is not None
    assert (10 + forecast.median_more) % step == 10 % step  # whole rounds after the cases so far
    assert 10 + forecast.median_more >= 80
