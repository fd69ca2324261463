"""Rates over cases: the one definition of format validity, error rate and their kin.

A rate is the share of cases for which something holds; an empty set of cases has no
rate (None, never 0). Its confidence interval is the Wilson score interval
(`evaluators.statistics.proportion_interval`), computed on the same counts.
"""

from __future__ import annotations

from collections.abc import Iterable


def proportion(count: int, total: int) -> float | None:
    """`count` out of `total` as a fraction; None when `total` is 0."""
    return count / total if total else None


def share(flags: Iterable[bool]) -> float | None:
    """The fraction of True among `flags`; None when there are none."""
    items = [bool(flag) for flag in flags]
    return proportion(sum(items), len(items))
