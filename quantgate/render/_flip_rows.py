"""Flips beside the accuracy delta, as table rows (decision.md, the report).

Rows hold plain text; each renderer escapes it for its medium.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluators.flips import FlipShare
from quantgate._formatting import MISSING, interval_points, percent, points
from quantgate.rundir._decision import Decision

FLIP_HEADER = (
    "variant",
    "cases",
    "Δ acc (pts)",
    "Δ CI",
    "flipped",
    "flipped CI",
    "right→wrong",
    "wrong→right",
    "wrong→other wrong",
    "noise floor",
)

FLIP_NOTE = (
    "Flips: the share of fields (a classification's label is one field) whose answer differs from the "
    "reference's on the same labeled cases, by kind: right to wrong, wrong to right, and wrong to "
    "another wrong answer; each with the interval the gates judge by (valid at any number of cases). "
    "A weak reference bounds the accuracy drop, so a variant that changes most of its answers can "
    "keep Δ small: the flip gate (max_flip_share) catches it. Noise floor: the reference against "
    "itself, when the run measured it."
)


def _share(share: FlipShare) -> str:
    interval = share.interval
    shown = percent(share.share)
    return shown if interval is None else f"{shown} [{percent(interval.low)}, {percent(interval.high)}]"


def flip_rows(decision: Decision) -> list[Sequence[str]]:
    """One row per candidate with flips: the accuracy delta with its interval, then the flips (empty:
    no candidate was paired)."""
    rows: list[Sequence[str]] = []
    for name, v in decision.variants.items():
        flips = v.flips
        if flips is None or v.is_reference:
            continue
        overall = v.comparison.overall if v.comparison else None
        interval = flips.flipped.interval
        rows.append(
            [
                name,
                str(flips.cases),
                points(overall.delta if overall else None),
                interval_points(overall.interval if overall else None),
                percent(flips.flipped.share),
                MISSING if interval is None else f"[{percent(interval.low)}, {percent(interval.high)}]",
                _share(flips.right_to_wrong),
                _share(flips.wrong_to_right),
                _share(flips.wrong_to_wrong),
                "not measured" if v.flip_noise_floor is None else percent(v.flip_noise_floor),
            ]
        )
    return rows
