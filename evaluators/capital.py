"""The hedged capital process behind `evaluators.betting`'s intervals, on values rescaled to [0, 1].

For each candidate mean m on a grid, one capital bets the mean is above m and one that it is
below, with predictable plug-in bets truncated at c/m and c/(1-m); m is excluded once either
capital reaches 2/alpha. The method and its references are in `evaluators.betting`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

HEDGE = 0.5  # theta: the weight of each of the two capitals (the same for both here)
PRIOR_MEAN = 0.5  # one fake observation at the centre, with the largest variance
PRIOR_VARIANCE = 0.25
CHUNK = 256  # observations per block, to bound memory at CHUNK x (grid + 1) floats


def check_options(*, confidence: float, low: float, high: float, grid: int, truncation: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"the range must be finite with low < high, got [{low}, {high}]")
    if grid < 2:
        raise ValueError(f"grid must have at least 2 steps, got {grid}")
    if not 0 < truncation < 1:
        raise ValueError(f"truncation must lie strictly between 0 and 1, got {truncation}")


def rescaled(
    values: Sequence[float] | NDArray[np.float64], *, low: float, high: float
) -> NDArray[np.float64]:
    data = np.asarray(values, dtype=np.float64).reshape(-1)
    outside = ~((data >= low) & (data <= high))  # NaN counts as outside
    if outside.any():
        index = int(np.argmax(outside))
        raise ValueError(f"value {float(data[index])!r} at index {index} lies outside [{low}, {high}]")
    return (data - low) / (high - low)


def plug_in_bets(x: NDArray[np.float64], *, alpha: float, horizon: int | None) -> NDArray[np.float64]:
    """Predictable plug-in bets: the bet on observation t uses observations before t only.

    `horizon` None tunes them for every time at once (t log(1 + t)), else for that sample size.
    """
    t = np.arange(1, x.size + 1, dtype=np.float64)
    mean = np.minimum((PRIOR_MEAN + np.cumsum(x)) / (t + 1), 1.0)
    variance = (PRIOR_VARIANCE + np.cumsum((x - mean) ** 2)) / (t + 1)
    previous = np.concatenate(([PRIOR_VARIANCE], variance[:-1]))  # > 0: the prior is in it
    scale = t * np.log1p(t) if horizon is None else np.full_like(t, float(horizon))
    bets: NDArray[np.float64] = np.sqrt(2 * math.log(1 / alpha) / (scale * previous))
    return bets


def excluded_counts(
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
    for first in range(0, x.size, CHUNK):
        stop = min(first + CHUNK, x.size)
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


def unit_bounds(
    x: NDArray[np.float64], *, alpha: float, grid: int, truncation: float, horizon: int | None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Running-intersection bounds on [0, 1] after each observation of `x` (in [0, 1])."""
    candidates = np.linspace(0.0, 1.0, grid + 1)
    # Hedged with theta = 1/2: the capital max(K+ / 2, K- / 2) reaches 1/alpha when either
    # side reaches 2/alpha, and each side's bets are tuned for alpha / 2.
    bets = plug_in_bets(x, alpha=HEDGE * alpha, horizon=horizon)
    threshold = math.log(1 / (HEDGE * alpha))
    below, above = excluded_counts(
        x, bets=bets, candidates=candidates, threshold=threshold, truncation=truncation
    )
    lower = candidates[np.maximum(below - 1, 0)]
    upper = candidates[np.minimum(grid + 1 - above, grid)]
    # Both sides can exclude every candidate only when the data contradict any fixed mean
    # (probability at most alpha); the interval then shrinks to the point where they met.
    crossed = lower > upper
    middle = (lower + upper) / 2
    return np.where(crossed, middle, lower), np.where(crossed, middle, upper)


def ever_reaches(
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


def final_unit_bounds(
    x: NDArray[np.float64], *, alpha: float, grid: int, truncation: float, horizon: int | None
) -> tuple[float, float]:
    """`unit_bounds` after the last observation only, by bisection over the grid.

    Each capital is monotone in the candidate mean (every factor is), and so is its running
    maximum, so the candidates ever excluded from below are a prefix of the grid (from above, a
    suffix): two bisections find the same bounds as the full grid, in O(n log grid).
    """
    candidates = np.linspace(0.0, 1.0, grid + 1)
    bets = plug_in_bets(x, alpha=HEDGE * alpha, horizon=horizon)
    threshold = math.log(1 / (HEDGE * alpha))

    def first(side: int, outside: bool) -> int:
        """The first index (from the low end for side 0, else from the high end) not excluded."""
        low, high = 0, grid + 1
        while low < high:
            middle = (low + high) // 2
            index = middle if side == 0 else grid - middle
            if ever_reaches(x, bets, float(candidates[index]), threshold, truncation)[side] == outside:
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
