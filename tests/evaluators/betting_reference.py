"""The betting method written out step by step from the paper, and two subtly broken versions of
`evaluators.betting`, for the structural tests (tests/evaluators/test_betting_structure.py).

The reference follows Waudby-Smith & Ramdas, "Estimating means of bounded random variables by
betting" (JRSSB 2023), on values in [0, 1]: the predictable plug-in bet on case t,

    lambda_t = sqrt(2 log(1 / a) / (sigma2_{t-1} t log(1 + t)))      (for every t: a sequence)
    lambda_t = sqrt(2 log(1 / a) / (sigma2_{t-1} n))                 (tuned to a fixed n)

with a = alpha / 2 the level of each side, mu_t = (1/2 + sum_{i<=t} x_i) / (t + 1) and
sigma2_t = (1/4 + sum_{i<=t} (x_i - mu_i)^2) / (t + 1) (sigma2_0 = 1/4); the capitals
K+_t(m) = prod (1 + min(lambda_i, c / m) (x_i - m)) and K-_t(m) = prod (1 - min(lambda_i,
c / (1 - m)) (x_i - m)); m is excluded once either has reached 1 / a = 2 / alpha (hedged with
weight 1/2, max(K+ / 2, K- / 2) >= 1 / alpha). One Python loop per candidate, no numpy: a second,
independent computation of what `evaluators.capital` vectorises.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from numpy.typing import NDArray

import evaluators.betting as betting
import evaluators.capital as capital


def reference_bets(x: list[float], *, side: float, horizon: int | None) -> list[float]:
    """The plug-in bets on each case of `x` (in [0, 1]) at one side's level `side`."""
    bets = []
    mean_sum, square_sum, variance = 0.5, 0.25, 0.25  # the prior: one fake case at 1/2
    for t, value in enumerate(x, start=1):
        scale = t * math.log(1 + t) if horizon is None else horizon
        bets.append(math.sqrt(2 * math.log(1 / side) / (variance * scale)))  # sigma2_{t-1}: before t
        mean_sum += value
        square_sum += (value - mean_sum / (t + 1)) ** 2
        variance = square_sum / (t + 1)
    return bets


def reference_capitals(
    x: list[float], m: float, *, side: float, truncation: float, horizon: int | None
) -> tuple[list[float], list[float]]:
    """K+_t(m) and K-_t(m) after each case of `x`."""
    up_cap = truncation / m if m > 0 else math.inf
    down_cap = truncation / (1 - m) if m < 1 else math.inf
    up, down, ups, downs = 1.0, 1.0, [], []
    for value, bet in zip(x, reference_bets(x, side=side, horizon=horizon), strict=True):
        up *= 1 + min(bet, up_cap) * (value - m)
        down *= 1 - min(bet, down_cap) * (value - m)
        ups.append(up)
        downs.append(down)
    return ups, downs


def reference_path(
    x: list[float], *, alpha: float, grid: int, truncation: float, horizon: int | None = None
) -> list[tuple[float, float]]:
    """The running-intersection bounds on [0, 1] after each case: the innermost grid points whose
    capital has ever reached 2 / alpha (0 and 1 while none has)."""
    candidates = [k / grid for k in range(grid + 1)]
    first_up: list[int | None] = []  # the first case at which K+(m) reached 2 / alpha, per m
    first_down: list[int | None] = []
    for m in candidates:
        ups, downs = reference_capitals(x, m, side=alpha / 2, truncation=truncation, horizon=horizon)
        first_up.append(next((t for t, k in enumerate(ups) if k >= 2 / alpha), None))
        first_down.append(next((t for t, k in enumerate(downs) if k >= 2 / alpha), None))
    path = []
    for t in range(len(x)):
        low = max(
            (m for m, s in zip(candidates, first_up, strict=True) if s is not None and s <= t), default=0.0
        )
        high = min(
            (m for m, s in zip(candidates, first_down, strict=True) if s is not None and s <= t), default=1.0
        )
        path.append((low, high) if low <= high else ((low + high) / 2,) * 2)
    return path


def bets_seeing_the_current_case(
    x: NDArray[np.float64], *, alpha: float, horizon: int | None
) -> NDArray[np.float64]:
    """`capital.plug_in_bets` with sigma2_t in place of sigma2_{t-1}: the bet on case t has seen
    case t, so the capital is no longer a supermartingale under the null."""
    t = np.arange(1, x.size + 1, dtype=np.float64)
    mean = np.minimum((capital.PRIOR_MEAN + np.cumsum(x)) / (t + 1), 1.0)
    variance = (capital.PRIOR_VARIANCE + np.cumsum((x - mean) ** 2)) / (t + 1)
    scale = t * np.log1p(t) if horizon is None else np.full_like(t, float(horizon))
    bets: NDArray[np.float64] = np.sqrt(2 * math.log(1 / alpha) / (scale * variance))
    return bets


def _level_three_and_a_half_percent(monkeypatch: pytest.MonkeyPatch) -> None:
    # HEDGE x alpha is each side's level (bets and threshold): 0.7 x 5% = 3.5% instead of 2.5%.
    monkeypatch.setattr(capital, "HEDGE", 0.7)
    monkeypatch.setattr(betting, "HEDGE", 0.7)


def _bets_see_the_current_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capital, "plug_in_bets", bets_seeing_the_current_case)
    monkeypatch.setattr(betting, "plug_in_bets", bets_seeing_the_current_case)


BROKEN: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "level 3.5% per side": _level_three_and_a_half_percent,
    "bets see the current case": _bets_see_the_current_case,
}
"""The two broken versions of the method the issue found the simulation tests could not tell apart."""


@contextmanager
def broken(name: str) -> Iterator[None]:
    """`evaluators.betting` broken as `BROKEN[name]` says, inside the block only."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        BROKEN[name](monkeypatch)
        yield
