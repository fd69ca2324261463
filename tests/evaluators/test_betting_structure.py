"""The betting method's structure, which no sample size blurs.

The simulations (test_betting.py, test_betting_fixed_sample.py) bound false passes by alpha / 2
plus a few standard errors, which a method at 3.5% per side or with bets that see the case they
bet on also meets. The checks here hold exactly: the bets are predictable, each side is tested at
alpha / 2 (its capital must reach 2 / alpha), and the capital and the bounds at small inputs equal
the arithmetic written out below and a step-by-step computation of the paper's method
(`tests/evaluators/betting_reference.py`). Each check is also run on those two broken versions
of the method, which it must reject.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

import evaluators.capital as capital
from evaluators.betting import RunningBounds, betting_interval, confidence_sequence, confidence_sequence_path
from evaluators.statistics import Interval
from tests.evaluators.betting_reference import BROKEN, broken, reference_capitals, reference_path

ALPHA = 0.05
C = 0.9  # the default truncation
MOVES = np.array([-1.0, -0.125, 0.0, 0.125, 1.0])  # per-case differences: whole cases, one field of eight


def _differences(seed: int, cases: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(v) for v in rng.choice(MOVES, p=[0.1, 0.2, 0.5, 0.15, 0.05], size=cases)]


def _unit(differences: list[float]) -> list[float]:
    return [(d + 1) / 2 for d in differences]


def _capitals(
    x: list[float], candidates: list[float], *, side: float, horizon: int | None, cases: int | None = None
) -> np.ndarray:
    """The implementation's K+ and K- (shape (2, candidates)) after the first `cases` of `x` (in
    [0, 1]; all by default), betting what `plug_in_bets` gives for the whole of `x`."""
    data = np.array(x)
    bets = capital.plug_in_bets(data, alpha=side, horizon=horizon)
    count = data.size if cases is None else cases
    log = (np.zeros(len(candidates)), np.zeros(len(candidates)))
    capital.excluded_counts(
        data[:count], bets=bets[:count], candidates=np.array(candidates), threshold=math.inf,
        truncation=C, start=log,
    )  # fmt: skip
    return np.exp(np.array(log))


def check_bets_are_predictable() -> None:
    """The bet on case i is the same whatever case i (or any later case) is."""
    x = np.array(_unit(_differences(1, 40)))
    for horizon in (None, 40):
        bets = capital.plug_in_bets(x, alpha=ALPHA / 2, horizon=horizon)
        for i in (0, 1, 7, 39):
            for value in (0.0, 0.3, 1.0):
                changed = x.copy()
                changed[i:] = value
                again = capital.plug_in_bets(changed, alpha=ALPHA / 2, horizon=horizon)
                assert np.array_equal(again[: i + 1], bets[: i + 1]), f"bet {i} saw case {i}"


def check_capital_is_predictable() -> None:
    """Changing case i leaves the capital and the bounds after case i - 1 as they were, and moves
    the capital after case i as K_{i-1} (1 + lambda_i (x_i - m)) with one bet lambda_i whatever
    x_i is."""
    differences = _differences(2, 30)
    x = _unit(differences)
    path = confidence_sequence_path(differences)
    candidates = [0.1, 0.3, 0.55, 0.8]
    for i in (0, 5, 29):
        before = _capitals(x, candidates, side=ALPHA / 2, horizon=None, cases=i)
        implied = []
        for value in (0.0, 0.05, 0.5, 0.95, 1.0):
            changed = [*x[:i], value, *x[i + 1 :]]
            assert np.array_equal(
                _capitals(changed, candidates, side=ALPHA / 2, horizon=None, cases=i), before
            )
            assert confidence_sequence_path([2 * v - 1 for v in changed])[:i] == path[:i]
            after = _capitals(changed, candidates, side=ALPHA / 2, horizon=None, cases=i + 1)
            gains = np.array([[value - m for m in candidates], [m - value for m in candidates]])
            implied.append((after / before - 1) / gains)
        assert np.allclose(implied, implied[0], rtol=1e-9), f"the bet on case {i} depends on case {i}"


def check_the_capital_equals_the_arithmetic() -> None:
    """Differences 0, -1, +1 (x = 1/2, 0, 1) at alpha 5% (each side 2.5%), truncation 0.9.

    sigma2_0 = 1/4 (the prior); mu_1 = (1/2 + 1/2) / 2 = 1/2, sigma2_1 = (1/4 + 0) / 2 = 1/8;
    mu_2 = (1/2 + 1/2 + 0) / 3 = 1/3, sigma2_2 = (1/4 + 0 + 1/9) / 3 = 13/108. With L = 2 log 40:
    lambda_1 = sqrt(L / (1/4 * 1 * log 2)) = 6.5250, lambda_2 = sqrt(L / (1/8 * 2 * log 3)) = 5.1829,
    lambda_3 = sqrt(L / (13/108 * 3 * log 4)) = 3.8390; for a fixed n = 3, sqrt(L / (sigma2 * 3)).
    At m = 0 the upward bet has no cap: K+ = (1 + lambda_1 / 2)(1 + 0)(1 + lambda_3) = 20.626, and
    the downward one is capped at 0.9 / 1: K- = (1 - 0.45)(1 - 0)(1 - 0.9) = 0.055. At m = 1/4 the
    caps are 3.6 and 1.2, below every bet: K+ = 1.9 * 0.1 * 3.7 = 0.703, K- = 0.7 * 1.3 * 0.1 = 0.091.
    """
    x = [0.5, 0.0, 1.0]
    log40 = math.log(40)
    sequence = [
        math.sqrt(2 * log40 / s) for s in (math.log(2) / 4, 2 * math.log(3) / 8, 3 * math.log(4) * 13 / 108)
    ]
    fixed = [math.sqrt(2 * log40 / (s * 3)) for s in (1 / 4, 1 / 8, 13 / 108)]
    assert sequence == pytest.approx([6.5250, 5.1829, 3.8390], abs=5e-5)
    for horizon, bets in ((None, sequence), (3, fixed)):
        assert capital.plug_in_bets(np.array(x), alpha=0.025, horizon=horizon) == pytest.approx(
            bets, rel=1e-12
        )
    expected = np.array(
        [[(1 + sequence[0] / 2) * (1 + sequence[2]), 1.9 * 0.1 * 3.7], [0.55 * 0.1, 0.7 * 1.3 * 0.1]]
    )
    assert expected == pytest.approx(np.array([[20.626, 0.703], [0.055, 0.091]]), abs=5e-4)
    assert _capitals(x, [0.0, 0.25], side=0.025, horizon=None) == pytest.approx(expected, rel=1e-12)


# Every difference 0 (x = 1/2), alpha 5%, truncation 0.9, grid 10 (m = 0, 0.1, ..., 1). Then
# sigma2_{t-1} = 1/(4t), so lambda_t = sqrt(8 log 40 / log(1 + t)) (6.52, 5.18, 4.61, 4.28, 4.06,
# ...), and K+_t(m) = prod (1 + min(lambda_s, 0.9 / m)(1/2 - m)) must reach 40:
#   m = 0:   4.262 * 3.592 * 3.307 = 50.6 at t = 3
#   m = 0.1: 3.610 * 3.073 * 2.846 = 31.6 at t = 3, * 2.713 = 85.6 at t = 4
#   m = 0.2: capped at 4.5 while lambda > 4.5: 2.35^3 * (1 + 0.3 * 4.282) = 29.6 at t = 4, then
#            * (1 + 0.3 * 4.058) = 65.7 at t = 5
#   m = 0.3: capped at 3 (to t = 25): 1.6^7 = 26.8, 1.6^8 = 42.9 at t = 8
#   m = 0.4: capped at 2.25 (to t = 339): 1.225^18 = 38.6, 1.225^19 = 47.3 at t = 19
#   m = 0.5: every factor 1, never.
# The lower bound is the largest m excluded (0 before any), the upper one 1 - it by symmetry; on
# [-1, 1], 2 m - 1. At 3.5% per side, 1.225^17 = 31.5 already reaches 1 / 0.035 = 28.6; with bets
# that see case t (sigma2_t = 1/(4(t + 1))), m = 0.1 reaches 4.6 * 3.54 * 3.13 = 51 at t = 3.
FIRST_EXCLUDED = {0.0: 3, 0.1: 4, 0.2: 5, 0.3: 8, 0.4: 19}


def check_identical_answers_give_the_hand_computed_bounds() -> None:
    cases = 25
    lows = [
        2 * max((m for m, t in FIRST_EXCLUDED.items() if t <= n), default=0.0) - 1
        for n in range(1, cases + 1)
    ]
    path = confidence_sequence_path([0.0] * cases, grid=10, truncation=C)
    assert [step.low for step in path] == pytest.approx(lows, abs=1e-12)
    assert [step.high for step in path] == pytest.approx([-low for low in lows], abs=1e-12)
    running = RunningBounds(np.zeros(cases), grid=10)
    assert [low for low, _ in running.advance(list(range(1, cases + 1)))] == pytest.approx(lows, abs=1e-12)


def _on_unit(interval: Interval | None) -> tuple[float, float]:
    assert interval is not None
    return (interval.low + 1) / 2, (interval.high + 1) / 2


def check_each_side_is_tested_at_half_alpha() -> None:
    """Every entry point's bounds are the grid points whose capital, betting at alpha / 2, reached
    2 / alpha: the step-by-step reference, at three levels, two truncations, and a fixed n."""
    differences = _differences(3, 60)
    x = _unit(differences)
    for confidence, truncation in ((0.95, C), (0.9, 0.5), (0.8, C)):
        alpha = 1 - confidence
        expected = np.array(reference_path(x, alpha=alpha, grid=50, truncation=truncation))
        path = confidence_sequence_path(differences, confidence=confidence, grid=50, truncation=truncation)
        assert np.array([_on_unit(step) for step in path]) == pytest.approx(expected, abs=1e-12)
        running = RunningBounds(np.array(differences), confidence=confidence, grid=50, truncation=truncation)
        at = [10, 33, 60]
        assert (np.array(running.advance(at)) + 1) / 2 == pytest.approx(expected[np.array(at) - 1], abs=1e-12)
        last = confidence_sequence(differences, confidence=confidence, grid=50, truncation=truncation)
        assert _on_unit(last) == pytest.approx(tuple(expected[-1]), abs=1e-12)
        fixed = betting_interval(differences, confidence=confidence, grid=50, truncation=truncation)
        tuned = reference_path(x, alpha=alpha, grid=50, truncation=truncation, horizon=len(x))[-1]
        assert _on_unit(fixed) == pytest.approx(tuned, abs=1e-12)


def check_the_threshold_is_two_over_alpha() -> None:
    """At the lower bound m the upward capital (at alpha / 2) has reached 2 / alpha; at the next
    grid point it never has, so no other threshold gives the same bound."""
    differences = _differences(4, 80)
    x = _unit(differences)
    low = confidence_sequence_path(differences, grid=100)[-1].low
    m = round((low + 1) / 2 * 100) / 100
    reached = max(reference_capitals(x, m, side=ALPHA / 2, truncation=C, horizon=None)[0])
    missed = max(reference_capitals(x, m + 0.01, side=ALPHA / 2, truncation=C, horizon=None)[0])
    assert reached >= 2 / ALPHA > missed, (reached, missed)


CHECKS: dict[str, Callable[[], None]] = {
    "bets are predictable": check_bets_are_predictable,
    "capital is predictable": check_capital_is_predictable,
    "capital equals the arithmetic": check_the_capital_equals_the_arithmetic,
    "identical answers give the hand-computed bounds": check_identical_answers_give_the_hand_computed_bounds,
    "each side at alpha / 2": check_each_side_is_tested_at_half_alpha,
    "threshold 2 / alpha": check_the_threshold_is_two_over_alpha,
}

CATCHES = [  # (check, broken version it must reject): every check that depends on what was broken
    ("bets are predictable", "bets see the current case"),
    ("capital is predictable", "bets see the current case"),
    ("capital equals the arithmetic", "bets see the current case"),
    ("identical answers give the hand-computed bounds", "bets see the current case"),
    ("identical answers give the hand-computed bounds", "level 3.5% per side"),
    ("each side at alpha / 2", "bets see the current case"),
    ("each side at alpha / 2", "level 3.5% per side"),
    ("threshold 2 / alpha", "level 3.5% per side"),
]


@pytest.mark.parametrize("name", list(CHECKS))
def test_the_method_passes_the_structural_check(name: str) -> None:
    CHECKS[name]()


@pytest.mark.parametrize(("name", "version"), CATCHES)
def test_the_structural_check_rejects_a_broken_method(name: str, version: str) -> None:
    with broken(version), pytest.raises(AssertionError):
        CHECKS[name]()


def test_each_broken_version_is_rejected_by_at_least_two_checks() -> None:
    for version in BROKEN:
        assert sum(1 for _, caught in CATCHES if caught == version) >= 2
