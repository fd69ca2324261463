"""The sequential accuracy-drop gate, and how many more cases an open gate needs.

Cases are evaluated in rounds and the gate is judged after every round. A fixed-sample
interval may not be looked at that way: peeking after each round and stopping at the first
pass inflates the error rate. The confidence sequence (`evaluators.betting`) covers the mean
at every time at once, so it may be checked as often as wanted.

- `drop_status` / `sequential_drop_status`: "pass", "fail" or "undecided" for a gate on
  the mean per-case difference (variant minus reference) and a `max_drop`.
- `forecast_settlement`: when a gate is still undecided, how many more paired cases its
  differences so far suggest it needs, by resampling them through the same sequence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from evaluators.betting import DEFAULT_GRID, DEFAULT_TRUNCATION, RunningBounds, confidence_sequence
from evaluators.statistics import Interval

SequentialStatus = Literal["pass", "fail", "undecided"]

_ROUNDS_PER_BLOCK = 8  # round ends judged per step of a simulation: few numpy calls, little waste
FORECAST_GRID = 200
"""Candidate means of the forecast's simulations (see `forecast_settlement`)."""


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
    truncation: float = DEFAULT_TRUNCATION,
) -> SequentialDrop:
    """The accuracy-drop gate after the paired cases so far; safe to call after every round.

    Args:
        values: Per-case differences (variant score minus reference score), each in [-1, 1],
            in the order the cases were evaluated.
        max_drop: The largest acceptable drop of the mean, as a fraction (0.05 is 5 points).
        confidence: Time-uniform coverage of the interval; (1 - confidence) / 2 bounds the
            chance of ever passing a variant whose true drop is max_drop or more.
        grid: Steps of the grid of candidate means over [-1, 1].
        truncation: The betting truncation (`evaluators.betting.DEFAULT_TRUNCATION`).

    Returns:
        The status, with the interval and the number of cases behind it.
    """
    interval = confidence_sequence(values, confidence=confidence, grid=grid, truncation=truncation)
    status = drop_status(interval=interval, max_drop=max_drop)
    return SequentialDrop(status=status, interval=interval, cases=len(values), max_drop=max_drop)


@dataclass(frozen=True, kw_only=True)
class DropGates:
    """The accuracy-drop gates a sequential run settles: overall, and per slice (tag).

    Attributes:
        max_drop: The overall gate (None: not gated).
        max_slice_drop: Each slice's gate (None: not gated).
        min_slice_cases: A slice is gated once it has this many paired cases.
        confidence: Time-uniform coverage of each sequence.
        truncation: The betting truncation.
    """

    max_drop: float | None
    max_slice_drop: float | None = None
    min_slice_cases: int = 20
    confidence: float = 0.95
    truncation: float = DEFAULT_TRUNCATION


_Path = tuple[NDArray[np.intp], float, int]
"""A gate's cases (positions in the sequence), its max drop, and the cases it is gated from."""


def _gate_paths(tags: Sequence[frozenset[str]], gates: DropGates, size: int) -> list[_Path]:
    paths: list[_Path] = []
    if gates.max_drop is not None:
        paths.append((np.arange(size, dtype=np.intp), gates.max_drop, 1))
    if gates.max_slice_drop is not None:
        for tag in sorted(set().union(*tags)) if tags else []:
            positions = np.array([i for i, own in enumerate(tags) if tag in own], dtype=np.intp)
            paths.append((positions, gates.max_slice_drop, gates.min_slice_cases))
    return paths


def _bound_status(low: float, high: float, max_drop: float) -> SequentialStatus:
    """`drop_status` of an interval given by its bounds."""
    return "pass" if low >= -max_drop else "fail" if high < -max_drop else "undecided"


def _joint(statuses: list[SequentialStatus]) -> SequentialStatus:
    if "fail" in statuses:
        return "fail"
    return "pass" if statuses and all(s == "pass" for s in statuses) else "undecided"


def gates_status(
    differences: Sequence[float], tags: Sequence[Sequence[str]], gates: DropGates
) -> SequentialStatus:
    """The accuracy-drop gates together after the paired cases so far: "fail" if one failed,
    "pass" if every gated one passed, else "undecided" (also when none is gated yet).

    Args:
        differences: Per-case differences (variant minus reference case accuracy) in case order.
        tags: Each case's tags (its slices), in the same order.
        gates: The gates.
    """
    values = np.asarray(differences, dtype=np.float64)
    statuses: list[SequentialStatus] = []
    for positions, max_drop, minimum in _gate_paths([frozenset(t) for t in tags], gates, values.size):
        if positions.size >= minimum and positions.size:
            interval = confidence_sequence(
                values[positions].tolist(), confidence=gates.confidence, truncation=gates.truncation
            )
            assert interval is not None
            statuses.append(_bound_status(interval.low, interval.high, max_drop))
    return _joint(statuses)


def _first_settled(
    values: NDArray[np.float64], tags: Sequence[frozenset[str]], gates: DropGates, *, step: int, start: int,
    grid: int,
) -> tuple[int, SequentialStatus] | None:  # fmt: skip
    """The first round end after `start` (every `step` cases, and the last) where the gates are
    settled, with their status; None when they never are within `values`."""
    paths = _gate_paths(tags, gates, values.size)
    running: dict[bytes, RunningBounds] = {}
    for positions, _, _ in paths:  # a slice of every case shares the overall sequence
        running.setdefault(
            positions.tobytes(),
            RunningBounds(
                values[positions], confidence=gates.confidence, truncation=gates.truncation, grid=grid
            ),
        )
    ends = [*range(start + step, values.size, step), values.size]
    for block in range(0, len(ends), _ROUNDS_PER_BLOCK):
        chunk = ends[block : block + _ROUNDS_PER_BLOCK]
        rows: list[list[SequentialStatus]] = [[] for _ in chunk]
        for positions, max_drop, minimum in paths:
            counts = np.searchsorted(positions, chunk, side="left").tolist()
            bounds = running[positions.tobytes()].advance(counts)
            for row, count, (low, high) in zip(rows, counts, bounds, strict=True):
                if count >= minimum and count:
                    row.append(_bound_status(low, high, max_drop))
        for end, row in zip(chunk, rows, strict=True):
            joint = _joint(row)
            if joint != "undecided":
                return end, joint
    return None


@dataclass(frozen=True, kw_only=True)
class Forecast:
    """How many more paired cases an undecided gate needs, from its differences so far.

    The paired cases so far are resampled (each with its tags) as the continuation of the
    same sequence, many times, and each continuation is judged after every round as the run
    judges it. It assumes the cases to come are like those seen: a guide for the budget, not
    a guarantee.

    Attributes:
        cases: Paired cases behind it.
        simulations: Continuations drawn.
        horizon: The most extra cases a continuation ran.
        settled_share: Share of continuations that settled within the horizon.
        pass_share: Share that settled as "pass".
        median_more: Median extra paired cases until settled (None: half did not settle).
        low_more: Their 10th percentile (None: none settled).
        high_more: Their 90th percentile (None: a tenth or more did not settle).
    """

    cases: int
    simulations: int
    horizon: int
    settled_share: float
    pass_share: float
    median_more: int | None
    low_more: int | None
    high_more: int | None


def _quantile(stops: NDArray[np.float64], q: float) -> int | None:
    value = float(np.quantile(stops, q, method="higher"))
    return None if math.isinf(value) else int(value)


def forecast_settlement(
    differences: Sequence[float],
    tags: Sequence[Sequence[str]],
    gates: DropGates,
    *,
    step: int,
    horizon: int = 2000,
    simulations: int = 200,
    seed: int = 0,
) -> Forecast | None:
    """Resample the paired cases so far to forecast how many more an undecided gate needs.

    The continuations are judged on a grid of `FORECAST_GRID` candidate means (the gates on
    1,000): a coarser grid only widens the intervals, so the forecast errs long, and it keeps a
    gate that sits at its threshold (whose continuations never settle) to a few seconds.

    Args:
        differences: Per-case differences so far, in case order.
        tags: Each case's tags.
        gates: The gates the run settles.
        step: Cases per round (the gate is judged at round ends).
        horizon: The most extra cases to simulate.
        simulations: Continuations to draw.
        seed: The resampling seed (the same records give the same forecast).

    Returns:
        The forecast; None without any paired case.
    """
    if not differences:
        return None
    rng = np.random.default_rng(seed)
    observed = np.asarray(differences, dtype=np.float64)
    own = [frozenset(t) for t in tags]
    stops = np.full(simulations, math.inf)
    passed = np.zeros(simulations, dtype=bool)
    for index in range(simulations):
        draw = rng.integers(0, observed.size, size=horizon)
        settled = _first_settled(
            np.concatenate([observed, observed[draw]]), own + [own[i] for i in draw.tolist()], gates,
            step=step, start=observed.size, grid=FORECAST_GRID,
        )  # fmt: skip
        if settled is not None:
            stops[index] = settled[0] - observed.size
            passed[index] = settled[1] == "pass"
    return Forecast(
        cases=observed.size,
        simulations=simulations,
        horizon=horizon,
        settled_share=float(np.isfinite(stops).mean()),
        pass_share=float(passed.mean()),
        median_more=_quantile(stops, 0.5),
        low_more=_quantile(stops, 0.1),
        high_more=_quantile(stops, 0.9),
    )
