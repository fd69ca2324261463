"""Intervals for the mean of bounded values by betting: valid at every sample size.

Per-case differences (variant minus reference case accuracy) lie in [-1, 1], are mostly 0,
and fail rarely but by a lot. Intervals that are only right asymptotically (a percentile
bootstrap, a normal approximation) pass a variant whose true drop is the threshold far more
often than their nominal level at n = 30 to 200. These intervals cannot: each candidate mean
m is excluded once a gambler betting against it has multiplied its capital by 2/alpha, which
a fair game allows with probability at most alpha/2 (Ville's inequality), at any n.

- `confidence_sequence_path` / `confidence_sequence`: the anytime-valid confidence sequence,
  which covers the mean at every time at once, so a run may look after every round
  (`evaluators.sequential` judges gates with it).
- `betting_interval`: the confidence interval for a fixed sample of n values, with bets
  tuned to n (it is the sequence's value at n, so it holds at that n).

Method: the hedged capital process with predictable plug-in bets of Waudby-Smith & Ramdas,
"Estimating means of bounded random variables by betting" (JRSSB, 2023). Values are rescaled
to [0, 1]. For each candidate mean m on a grid, one capital bets the mean is above m and
one that it is below, with the plug-in bet sqrt(2 log(2/alpha) / (sigma_{t-1}^2 t log(1+t)))
(for the sequence) or sqrt(2 log(2/alpha) / (sigma_{t-1}^2 n)) (for a fixed n), truncated at
c/m and c/(1-m); hedged with weight 1/2 each, m is excluded once either capital reaches
2/alpha. Each capital is monotone in m, so the excluded grid points form a prefix and a suffix
of the grid and the bounds are the innermost excluded points: the grid only widens the
interval. With c = 1/2 the sequence equals confseq's `hedged_cs(x, alpha, breaks=grid,
running_intersection=True)` (tests/evaluators/test_betting.py checks values computed with
it), except that when every candidate is excluded it keeps a point where confseq resets.

The truncation c. Any c < 1 keeps the guarantee (the capital stays positive); c sets how
fast the capital can grow when the data are nearly constant, which is the common case here:
a good quantization answers most cases exactly as the reference. With every difference 0,
the lower bound of a 95% interval reaches -5 points after 143 cases with c = 1/2 (confseq's
default), 96 with 3/4 and 80 with 0.9, against 72 for any valid one-sided 97.5% bound (see
`docs/decision.md`). Resampling the per-case differences of Q8_0 and Q4_K_M against F16
(92% of cases identical) through the sequence, checked every 12 cases, the gate settles
after a median of 180 and 144 cases with c = 1/2, 96 and 84 with c = 0.9; Q2_K fails after
84 and 60. The price is a longer tail when a variant fails one case completely now and
then. `DEFAULT_TRUNCATION` is 0.9; the simulation tests check the coverage with it.

Why not a library: confseq 0.0.11 (Howard, Waudby-Smith & Ramdas) does not install on
Python 3.11: its C++ extension needs the Boost headers and pins a pybind11 that does not
compile against 3.11; it also imports matplotlib and multiprocess, and its betting code
loops over grid points in Python. `expectation` 0.6.x requires Python 3.12, and its only
release installable on 3.11 (0.0.2) is a yanked, unrelated package. So the ~80 lines are
here, vectorised with numpy over the grid.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from evaluators.capital import (
    HEDGE,
    check_options,
    excluded_counts,
    final_unit_bounds,
    plug_in_bets,
    rescaled,
    unit_bounds,
)
from evaluators.statistics import Interval

DEFAULT_GRID = 1000
"""Grid steps over [low, high]: candidate means every (high - low) / 1000."""

DEFAULT_TRUNCATION = 0.9
"""c: a bet never risks more than this share of the capital (see the module docstring)."""

CONFSEQ_TRUNCATION = 0.5
"""confseq's default truncation, which runs written before `DEFAULT_TRUNCATION` were judged with."""


def method_name(
    confidence: float, *, sequence: bool, grid: int = DEFAULT_GRID, truncation: float = DEFAULT_TRUNCATION
) -> str:
    """How `confidence_sequence` (`sequence`) or `betting_interval` names its intervals."""
    kind = "confidence sequence" if sequence else "confidence interval for a fixed sample"
    tail = ", running intersection" if sequence else ""
    return (
        f"hedged betting {kind} (Waudby-Smith & Ramdas 2023), alpha {1 - confidence:.4g}, grid {grid}, "
        f"truncation {truncation:g}{tail}"
    )


class RunningBounds:
    """The confidence sequence of differences in [-1, 1], advanced case by case, so that a
    simulation stops computing once a gate is settled.

    Args:
        values: Every value the sequence may see, in order (bets use the values before each).
        confidence: Time-uniform coverage.
        truncation: The betting truncation.
        grid: Steps of the grid of candidate means.
    """

    def __init__(
        self,
        values: NDArray[np.float64],
        *,
        confidence: float = 0.95,
        truncation: float = DEFAULT_TRUNCATION,
        grid: int = DEFAULT_GRID,
    ) -> None:
        check_options(confidence=confidence, low=-1.0, high=1.0, grid=grid, truncation=truncation)
        self._x = rescaled(values, low=-1.0, high=1.0)
        alpha = 1 - confidence
        self._bets = plug_in_bets(self._x, alpha=HEDGE * alpha, horizon=None)
        self._threshold = math.log(1 / (HEDGE * alpha))
        self._truncation = truncation
        self._candidates = np.linspace(0.0, 1.0, grid + 1)
        self._log = (np.zeros(grid + 1), np.zeros(grid + 1))
        self._excluded = (0, 0)
        self.count = 0

    def advance(self, counts: Sequence[int]) -> list[tuple[float, float]]:
        """The intervals (low, high) after the first `count` values, for each of `counts` (in
        increasing order, none below the last count asked)."""
        last = max(counts, default=self.count)
        below = np.zeros(0, dtype=np.int64)
        above = np.zeros(0, dtype=np.int64)
        if last > self.count:
            x, bets = self._x[self.count : last], self._bets[self.count : last]
            below, above = excluded_counts(
                x, bets=bets, candidates=self._candidates, threshold=self._threshold,
                truncation=self._truncation, start=self._log,
            )  # fmt: skip
        grid = self._candidates.size - 1
        found = []
        for count in counts:
            offset = count - self.count - 1
            low_out = max(self._excluded[0], int(below[offset])) if offset >= 0 else self._excluded[0]
            high_out = max(self._excluded[1], int(above[offset])) if offset >= 0 else self._excluded[1]
            lower = float(self._candidates[max(low_out - 1, 0)])
            upper = float(self._candidates[min(grid + 1 - high_out, grid)])
            if lower > upper:
                lower = upper = (lower + upper) / 2
            found.append((2 * lower - 1, 2 * upper - 1))
        if last > self.count:
            self._excluded = (max(self._excluded[0], int(below[-1])), max(self._excluded[1], int(above[-1])))
            self.count = last
        return found


def _path(
    values: Sequence[float],
    *,
    confidence: float,
    low: float,
    high: float,
    grid: int,
    truncation: float,
    horizon: int | None,
) -> list[tuple[float, float]]:
    check_options(confidence=confidence, low=low, high=high, grid=grid, truncation=truncation)
    x = rescaled(values, low=low, high=high)
    if x.size == 0:
        return []
    lower, upper = unit_bounds(x, alpha=1 - confidence, grid=grid, truncation=truncation, horizon=horizon)
    width = high - low
    return [
        (low + width * lo, low + width * hi) for lo, hi in zip(lower.tolist(), upper.tolist(), strict=True)
    ]


def confidence_sequence_path(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    low: float = -1.0,
    high: float = 1.0,
    grid: int = DEFAULT_GRID,
    truncation: float = DEFAULT_TRUNCATION,
) -> list[Interval]:
    """The anytime-valid interval of the mean after each of `values`, in order.

    With probability at least `confidence`, every interval in the list (and in any longer
    list from more values) contains the mean: it may be checked after every case.

    Args:
        values: Observations in order, each in [low, high], independent with a common mean.
        confidence: Time-uniform coverage, strictly between 0 and 1.
        low: Smallest possible value.
        high: Largest possible value.
        grid: Steps of the grid of candidate means over [low, high].
        truncation: The largest share of the capital a bet risks, strictly between 0 and 1.

    Returns:
        One interval per value (the i-th after values[: i + 1]); empty for no values.

    Raises:
        ValueError: A value outside [low, high] (or NaN), or an invalid option.
    """
    bounds = _path(
        values, confidence=confidence, low=low, high=high, grid=grid, truncation=truncation, horizon=None
    )
    method = method_name(confidence, sequence=True, grid=grid, truncation=truncation)
    return [Interval(low=lo, high=hi, confidence=confidence, method=method) for lo, hi in bounds]


def confidence_sequence(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    low: float = -1.0,
    high: float = 1.0,
    grid: int = DEFAULT_GRID,
    truncation: float = DEFAULT_TRUNCATION,
) -> Interval | None:
    """The anytime-valid interval of the mean after observing `values` in order.

    It is the running intersection over all prefixes of `values`, so it stays valid however
    often it was looked at before: the last step of `confidence_sequence_path`, computed by
    bisection. Arguments as for `confidence_sequence_path`.

    Returns:
        The interval, or None for no values.
    """
    return _final_interval(
        values, confidence=confidence, low=low, high=high, grid=grid, truncation=truncation, sequence=True
    )


def betting_interval(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    low: float = -1.0,
    high: float = 1.0,
    grid: int = DEFAULT_GRID,
    truncation: float = DEFAULT_TRUNCATION,
) -> Interval | None:
    """The confidence interval of the mean of a fixed sample of bounded values, valid at any n.

    The bets are tuned for n = len(values), so it is narrower at n than the confidence
    sequence, but it may be looked at only once: judge a fixed sample with it, not rounds.
    It covers the mean with probability at least `confidence` whatever n and the values'
    distribution in [low, high]; the order of `values` is the order of betting (pass them
    in the run's case order so that the same records give the same interval).

    Args:
        values: The sample, each in [low, high], independent with a common mean.
        confidence: Coverage, strictly between 0 and 1.
        low: Smallest possible value.
        high: Largest possible value.
        grid: Steps of the grid of candidate means over [low, high].
        truncation: The largest share of the capital a bet risks, strictly between 0 and 1.

    Returns:
        The interval, or None for no values.

    Raises:
        ValueError: A value outside [low, high] (or NaN), or an invalid option.
    """
    return _final_interval(
        values, confidence=confidence, low=low, high=high, grid=grid, truncation=truncation, sequence=False
    )


def _final_interval(
    values: Sequence[float],
    *,
    confidence: float,
    low: float,
    high: float,
    grid: int,
    truncation: float,
    sequence: bool,
) -> Interval | None:
    """The interval after all of `values`: the sequence's (bets for every time) or the fixed
    sample's (bets tuned to its size)."""
    check_options(confidence=confidence, low=low, high=high, grid=grid, truncation=truncation)
    x = rescaled(values, low=low, high=high)
    if x.size == 0:
        return None
    horizon = None if sequence else x.size
    lo, hi = final_unit_bounds(x, alpha=1 - confidence, grid=grid, truncation=truncation, horizon=horizon)
    method = method_name(confidence, sequence=sequence, grid=grid, truncation=truncation)
    return Interval(
        low=low + (high - low) * lo, high=low + (high - low) * hi, confidence=confidence, method=method
    )
