"""Anytime-valid confidence sequences for a mean, and the sequential accuracy-drop gate.

Cases are evaluated in rounds and the gate is judged after every round. A fixed-sample
interval (`statistics.bootstrap_interval`) may not be looked at that way: peeking after each
round and stopping at the first pass inflates the error rate. A confidence sequence covers
the mean at every time at once, so it may be checked as often as wanted.

- `confidence_sequence_path`: the interval after each observation, as the running
  intersection of the intervals of every prefix (so it only ever narrows).
- `confidence_sequence`: the latest of those, the interval after all of `values`.
- `drop_status` / `sequential_drop_status`: "pass", "fail" or "undecided" for a gate on
  the mean per-case difference (variant minus reference) and a `max_drop`.

Method: the hedged capital confidence sequence with predictable plug-in bets of
Waudby-Smith & Ramdas, "Estimating means of bounded random variables by betting" (JRSSB,
2023), with the defaults of the authors' implementation, `confseq.betting.hedged_cs` in
confseq 0.0.11. Values are rescaled to [0, 1]. For each candidate mean m on a grid, one
capital process bets the mean is above m and one that it is below, with the plug-in bet
sqrt(2 log(2/alpha) / (sigma_{t-1}^2 t log(1+t))) truncated at 1/2m and 1/2(1-m); hedged
with weight 1/2 each, m is excluded once either capital reaches 2/alpha (Ville's
inequality). Each capital is monotone in m, so the excluded grid points form a prefix and a
suffix of the grid and the bounds are the innermost excluded points: the grid only widens
the interval. The result equals `hedged_cs(x, alpha, breaks=grid, running_intersection=True)`
(tests/evaluators/test_sequential.py checks values computed with it), except that
when every candidate is excluded it keeps a point where confseq resets to [0, 1].

Why not a library: confseq 0.0.11 (Howard, Waudby-Smith & Ramdas) does not install on
Python 3.11: its C++ extension needs the Boost headers and pins a pybind11 that does not
compile against 3.11; it also imports matplotlib and multiprocess, and its betting code
loops over grid points in Python. `expectation` 0.6.x requires Python 3.12, and its only
release installable on 3.11 (0.0.2) is a yanked, unrelated package. So the ~60 lines are
here, vectorised with numpy over the grid. The betting sequence is chosen over Hoeffding or
empirical-Bernstein sequences because it adapts to the variance, and per-case differences
are mostly 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from evaluators.statistics import Interval

SequentialStatus = Literal["pass", "fail", "undecided"]

DEFAULT_GRID = 1000
"""Grid steps over [low, high]: candidate means every (high - low) / 1000."""

_TRUNCATION = 0.5  # c in the paper: a bet never risks more than half the capital
_HEDGE = 0.5  # theta: the weight of each of the two capitals (the same for both here)
_PRIOR_MEAN = 0.5  # one fake observation at the centre, with the largest variance
_PRIOR_VARIANCE = 0.25
_CHUNK = 256  # observations per block, to bound memory at _CHUNK x (grid + 1) floats


@dataclass(frozen=True, kw_only=True)
class SequentialDrop:
    """The sequential accuracy-drop gate after some cases.

    Attributes:
        status: "pass" when the interval's lower bound is at or above -max_drop, "fail" when
            its upper bound is below -max_drop, else "undecided" (also for no cases).
        interval: The anytime-valid interval of the mean difference; None for no cases.
        cases: Number of paired cases behind it.
        max_drop: The gate, as a fraction (0.05 is 5 points).
    """

    status: SequentialStatus
    interval: Interval | None
    cases: int
    max_drop: float


def _check_options(*, confidence: float, low: float, high: float, grid: int) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"the range must be finite with low < high, got [{low}, {high}]")
    if grid < 2:
        raise ValueError(f"grid must have at least 2 steps, got {grid}")


def _rescaled(values: Sequence[float], *, low: float, high: float) -> NDArray[np.float64]:
    data = np.asarray(values, dtype=np.float64).reshape(-1)
    outside = ~((data >= low) & (data <= high))  # NaN counts as outside
    if outside.any():
        index = int(np.argmax(outside))
        raise ValueError(f"value {float(data[index])!r} at index {index} lies outside [{low}, {high}]")
    return (data - low) / (high - low)


def _plug_in_bets(x: NDArray[np.float64], *, alpha: float) -> NDArray[np.float64]:
    """Predictable plug-in bets: the bet on observation t uses observations before t only."""
    t = np.arange(1, x.size + 1, dtype=np.float64)
    mean = np.minimum((_PRIOR_MEAN + np.cumsum(x)) / (t + 1), 1.0)
    variance = (_PRIOR_VARIANCE + np.cumsum((x - mean) ** 2)) / (t + 1)
    previous = np.concatenate(([_PRIOR_VARIANCE], variance[:-1]))  # > 0: the prior is in it
    bets: NDArray[np.float64] = np.sqrt(2 * math.log(1 / alpha) / (t * np.log1p(t) * previous))
    return bets


def _excluded_counts(
    x: NDArray[np.float64], *, bets: NDArray[np.float64], candidates: NDArray[np.float64], threshold: float
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """After each observation, how many candidate means have ever been excluded from each end.

    The upward capital (betting the mean is above m) is non-increasing in m, so the
    candidates it excludes at any time are a prefix of the grid; the downward one's are a
    suffix. The running maximum of the counts over time is then the running intersection.
    """
    with np.errstate(divide="ignore"):  # no cap at m = 0 (upward) or m = 1 (downward)
        caps_up = _TRUNCATION / candidates
        caps_down = _TRUNCATION / (1 - candidates)
    log_up = np.zeros(candidates.size)
    log_down = np.zeros(candidates.size)
    below = np.empty(x.size, dtype=np.int64)
    above = np.empty(x.size, dtype=np.int64)
    for start in range(0, x.size, _CHUNK):
        stop = min(start + _CHUNK, x.size)
        step = bets[start:stop, None]
        gain = x[start:stop, None] - candidates[None, :]
        path_up = np.cumsum(np.log1p(np.minimum(step, caps_up) * gain), axis=0) + log_up
        path_down = np.cumsum(np.log1p(-np.minimum(step, caps_down) * gain), axis=0) + log_down
        below[start:stop] = np.count_nonzero(path_up >= threshold, axis=1)
        above[start:stop] = np.count_nonzero(path_down >= threshold, axis=1)
        log_up, log_down = path_up[-1], path_down[-1]
    return np.maximum.accumulate(below), np.maximum.accumulate(above)


def _unit_bounds(
    x: NDArray[np.float64], *, alpha: float, grid: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Running-intersection bounds on [0, 1] after each observation of `x` (in [0, 1])."""
    candidates = np.linspace(0.0, 1.0, grid + 1)
    # Hedged with theta = 1/2: the capital max(K+ / 2, K- / 2) reaches 1/alpha when either
    # side reaches 2/alpha, and each side's bets are tuned for alpha / 2.
    bets = _plug_in_bets(x, alpha=_HEDGE * alpha)
    threshold = math.log(1 / (_HEDGE * alpha))
    below, above = _excluded_counts(x, bets=bets, candidates=candidates, threshold=threshold)
    lower = candidates[np.maximum(below - 1, 0)]
    upper = candidates[np.minimum(grid + 1 - above, grid)]
    # Both sides can exclude every candidate only when the data contradict any fixed mean
    # (probability at most alpha); the interval then shrinks to the point where they met.
    crossed = lower > upper
    middle = (lower + upper) / 2
    return np.where(crossed, middle, lower), np.where(crossed, middle, upper)


def _method(alpha: float, grid: int) -> str:
    return (
        f"hedged betting confidence sequence (Waudby-Smith & Ramdas 2023), alpha {alpha:g}, "
        f"grid {grid}, running intersection"
    )


def confidence_sequence_path(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    low: float = -1.0,
    high: float = 1.0,
    grid: int = DEFAULT_GRID,
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

    Returns:
        One interval per value (the i-th after values[: i + 1]); empty for no values.

    Raises:
        ValueError: A value outside [low, high] (or NaN), or an invalid option.
    """
    _check_options(confidence=confidence, low=low, high=high, grid=grid)
    x = _rescaled(values, low=low, high=high)
    if x.size == 0:
        return []
    alpha = 1 - confidence
    lower, upper = _unit_bounds(x, alpha=alpha, grid=grid)
    width = high - low
    method = _method(alpha, grid)
    return [
        Interval(low=low + width * lo, high=low + width * hi, confidence=confidence, method=method)
        for lo, hi in zip(lower.tolist(), upper.tolist(), strict=True)
    ]


def confidence_sequence(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    low: float = -1.0,
    high: float = 1.0,
    grid: int = DEFAULT_GRID,
) -> Interval | None:
    """The anytime-valid interval of the mean after observing `values` in order.

    It is the running intersection over all prefixes of `values`, so it stays valid however
    often it was looked at before. Arguments as for `confidence_sequence_path`.

    Returns:
        The interval, or None for no values.
    """
    path = confidence_sequence_path(values, confidence=confidence, low=low, high=high, grid=grid)
    return path[-1] if path else None


def drop_status(*, interval: Interval | None, max_drop: float) -> SequentialStatus:
    """Judge a drop gate from an interval of the mean difference (variant minus reference).

    Args:
        interval: Anytime-valid interval of the mean difference; None when nothing was paired.
        max_drop: The largest acceptable drop, as a non-negative fraction.

    Returns:
        "pass" if the lower bound is at or above -max_drop, "fail" if the upper bound is
        below it, else "undecided".
    """
    if not (math.isfinite(max_drop) and max_drop >= 0):
        raise ValueError(f"max_drop must be a non-negative number, got {max_drop}")
    if interval is None:
        return "undecided"
    if interval.low >= -max_drop:
        return "pass"
    if interval.high < -max_drop:
        return "fail"
    return "undecided"


def sequential_drop_status(
    values: Sequence[float],
    *,
    max_drop: float,
    confidence: float = 0.95,
    grid: int = DEFAULT_GRID,
) -> SequentialDrop:
    """The accuracy-drop gate after the paired cases so far; safe to call after every round.

    Args:
        values: Per-case differences (variant score minus reference score), each in [-1, 1],
            in the order the cases were evaluated.
        max_drop: The largest acceptable drop of the mean, as a fraction (0.05 is 5 points).
        confidence: Time-uniform coverage of the interval; 1 - confidence bounds the chance
            of ever passing a variant whose true drop is max_drop or more.
        grid: Steps of the grid of candidate means over [-1, 1].

    Returns:
        The status, with the interval and the number of cases behind it.
    """
    interval = confidence_sequence(values, confidence=confidence, grid=grid)
    status = drop_status(interval=interval, max_drop=max_drop)
    return SequentialDrop(status=status, interval=interval, cases=len(values), max_drop=max_drop)
