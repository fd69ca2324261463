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

from evaluators.statistics import Interval

DEFAULT_GRID = 1000
"""Grid steps over [low, high]: candidate means every (high - low) / 1000."""

DEFAULT_TRUNCATION = 0.9
"""c: a bet never risks more than this share of the capital (see the module docstring)."""

CONFSEQ_TRUNCATION = 0.5
"""confseq's default truncation, which runs written before `DEFAULT_TRUNCATION` were judged with."""

_HEDGE = 0.5  # theta: the weight of each of the two capitals (the same for both here)
_PRIOR_MEAN = 0.5  # one fake observation at the centre, with the largest variance
_PRIOR_VARIANCE = 0.25
_CHUNK = 256  # observations per block, to bound memory at _CHUNK x (grid + 1) floats


def _check_options(*, confidence: float, low: float, high: float, grid: int, truncation: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"the range must be finite with low < high, got [{low}, {high}]")
    if grid < 2:
        raise ValueError(f"grid must have at least 2 steps, got {grid}")
    if not 0 < truncation < 1:
        raise ValueError(f"truncation must lie strictly between 0 and 1, got {truncation}")


def _rescaled(
    values: Sequence[float] | NDArray[np.float64], *, low: float, high: float
) -> NDArray[np.float64]:
    data = np.asarray(values, dtype=np.float64).reshape(-1)
    outside = ~((data >= low) & (data <= high))  # NaN counts as outside
    if outside.any():
        index = int(np.argmax(outside))
        raise ValueError(f"value {float(data[index])!r} at index {index} lies outside [{low}, {high}]")
    return (data - low) / (high - low)


def _plug_in_bets(x: NDArray[np.float64], *, alpha: float, horizon: int | None) -> NDArray[np.float64]:
    """Predictable plug-in bets: the bet on observation t uses observations before t only.

    `horizon` None tunes them for every time at once (t log(1 + t)), else for that sample size.
    """
    t = np.arange(1, x.size + 1, dtype=np.float64)
    mean = np.minimum((_PRIOR_MEAN + np.cumsum(x)) / (t + 1), 1.0)
    variance = (_PRIOR_VARIANCE + np.cumsum((x - mean) ** 2)) / (t + 1)
    previous = np.concatenate(([_PRIOR_VARIANCE], variance[:-1]))  # > 0: the prior is in it
    scale = t * np.log1p(t) if horizon is None else np.full_like(t, float(horizon))
    bets: NDArray[np.float64] = np.sqrt(2 * math.log(1 / alpha) / (scale * previous))
    return bets


def _excluded_counts(
    x: NDArray[np.float64],
    *,
    bets: NDArray[np.float64],
    candidates: NDArray[np.float64],
    threshold: float,
    truncation: float,
    start: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """After each observation, how many candidate means have ever been excluded from each end.

    The upward capital (betting the mean is above m) is non-increasing in m, so the
    candidates it excludes at any time are a prefix of the grid; the downward one's are a
    suffix. The running maximum of the counts over time is then the running intersection.
    `start` holds the log capitals before `x` (updated in place): a sequence fed piece by piece.
    """
    with np.errstate(divide="ignore"):  # no cap at m = 0 (upward) or m = 1 (downward)
        caps_up = truncation / candidates
        caps_down = truncation / (1 - candidates)
    log_up, log_down = start if start is not None else (np.zeros(candidates.size), np.zeros(candidates.size))
    below = np.empty(x.size, dtype=np.int64)
    above = np.empty(x.size, dtype=np.int64)
    for first in range(0, x.size, _CHUNK):
        stop = min(first + _CHUNK, x.size)
        step = bets[first:stop, None]
        gain = x[first:stop, None] - candidates[None, :]
        path_up = np.cumsum(np.log1p(np.minimum(step, caps_up) * gain), axis=0) + log_up
        path_down = np.cumsum(np.log1p(-np.minimum(step, caps_down) * gain), axis=0) + log_down
        below[first:stop] = np.count_nonzero(path_up >= threshold, axis=1)
        above[first:stop] = np.count_nonzero(path_down >= threshold, axis=1)
        log_up, log_down = path_up[-1], path_down[-1]
    if start is not None:
        start[0][:], start[1][:] = log_up, log_down
    return np.maximum.accumulate(below), np.maximum.accumulate(above)


def _unit_bounds(
    x: NDArray[np.float64], *, alpha: float, grid: int, truncation: float, horizon: int | None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Running-intersection bounds on [0, 1] after each observation of `x` (in [0, 1])."""
    candidates = np.linspace(0.0, 1.0, grid + 1)
    # Hedged with theta = 1/2: the capital max(K+ / 2, K- / 2) reaches 1/alpha when either
    # side reaches 2/alpha, and each side's bets are tuned for alpha / 2.
    bets = _plug_in_bets(x, alpha=_HEDGE * alpha, horizon=horizon)
    threshold = math.log(1 / (_HEDGE * alpha))
    below, above = _excluded_counts(
        x, bets=bets, candidates=candidates, threshold=threshold, truncation=truncation
    )
    lower = candidates[np.maximum(below - 1, 0)]
    upper = candidates[np.minimum(grid + 1 - above, grid)]
    # Both sides can exclude every candidate only when the data contradict any fixed mean
    # (probability at most alpha); the interval then shrinks to the point where they met.
    crossed = lower > upper
    middle = (lower + upper) / 2
    return np.where(crossed, middle, lower), np.where(crossed, middle, upper)


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


def _ever_reaches(
    x: NDArray[np.float64], bets: NDArray[np.float64], candidate: float, threshold: float, truncation: float
) -> tuple[bool, bool]:
    """Whether the upward and the downward capital against `candidate` ever reach the threshold."""
    gain = x - candidate
    up = np.minimum(bets, truncation / candidate) if candidate > 0 else bets
    down = np.minimum(bets, truncation / (1 - candidate)) if candidate < 1 else bets
    return (
        bool(np.any(np.cumsum(np.log1p(up * gain)) >= threshold)),
        bool(np.any(np.cumsum(np.log1p(-down * gain)) >= threshold)),
    )


def _final_unit_bounds(
    x: NDArray[np.float64], *, alpha: float, grid: int, truncation: float, horizon: int | None
) -> tuple[float, float]:
    """`_unit_bounds` after the last observation only, by bisection over the grid.

    Each capital is monotone in the candidate mean (every factor is), and so is its running
    maximum, so the candidates ever excluded from below are a prefix of the grid (from above, a
    suffix): two bisections find the same bounds as the full grid, in O(n log grid).
    """
    candidates = np.linspace(0.0, 1.0, grid + 1)
    bets = _plug_in_bets(x, alpha=_HEDGE * alpha, horizon=horizon)
    threshold = math.log(1 / (_HEDGE * alpha))

    def first(side: int, outside: bool) -> int:
        """The first index (from the low end for side 0, else from the high end) not excluded."""
        low, high = 0, grid + 1
        while low < high:
            middle = (low + high) // 2
            index = middle if side == 0 else grid - middle
            if _ever_reaches(x, bets, float(candidates[index]), threshold, truncation)[side] == outside:
                low = middle + 1
            else:
                high = middle
        return low

    below, above = first(0, True), first(1, True)
    lower = float(candidates[max(below - 1, 0)])
    upper = float(candidates[min(grid + 1 - above, grid)])
    if lower > upper:  # both sides excluded everything: the point where they met
        lower = upper = (lower + upper) / 2
    return lower, upper


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
        _check_options(confidence=confidence, low=-1.0, high=1.0, grid=grid, truncation=truncation)
        self._x = _rescaled(values, low=-1.0, high=1.0)
        alpha = 1 - confidence
        self._bets = _plug_in_bets(self._x, alpha=_HEDGE * alpha, horizon=None)
        self._threshold = math.log(1 / (_HEDGE * alpha))
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
            below, above = _excluded_counts(
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
    _check_options(confidence=confidence, low=low, high=high, grid=grid, truncation=truncation)
    x = _rescaled(values, low=low, high=high)
    if x.size == 0:
        return []
    lower, upper = _unit_bounds(x, alpha=1 - confidence, grid=grid, truncation=truncation, horizon=horizon)
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
    _check_options(confidence=confidence, low=low, high=high, grid=grid, truncation=truncation)
    x = _rescaled(values, low=low, high=high)
    if x.size == 0:
        return None
    horizon = None if sequence else x.size
    lo, hi = _final_unit_bounds(x, alpha=1 - confidence, grid=grid, truncation=truncation, horizon=horizon)
    method = method_name(confidence, sequence=sequence, grid=grid, truncation=truncation)
    return Interval(
        low=low + (high - low) * lo, high=low + (high - low) * hi, confidence=confidence, method=method
    )
