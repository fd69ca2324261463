"""Machines a variant needs for a request rate, from its measured goodput, and what they cost.

machines = ceil(rate / goodput per machine). The goodput's interval gives the machines' interval
the other way round: its lower bound needs the most machines, its upper bound the fewest. A figure
not measured stays None, with the reason in `missing`; it is never 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["MachineCost", "machine_cost", "machines_for", "not_priced"]


def machines_for(rate_rps: float, goodput_rps: float | None) -> int | None:
    """Machines that serve `rate_rps` when each serves `goodput_rps` within the targets (None: no
    goodput, or none within the targets)."""
    if goodput_rps is None or goodput_rps <= 0:
        return None
    return max(math.ceil(rate_rps / goodput_rps - 1e-9), 1)  # 10 / 2.5 is 4, not 5 by rounding noise


@dataclass(frozen=True, kw_only=True)
class MachineCost:
    """The machines a variant needs for a request rate, and their cost.

    Attributes:
        request_rate_rps: The rate to serve (requests per second); None when not given.
        goodput_rps: Requests per second one machine served within the latency targets, and its
            interval (`goodput_rps_low`, `goodput_rps_high`).
        machines: ceil(rate / goodput); `machines_low` from the goodput's upper bound,
            `machines_high` from its lower bound.
        per_hour: machines x the machine's price per hour (with `per_hour_low`, `per_hour_high`).
        per_1000: The same per 1,000 requests at the rate: per_hour / (rate x 3.6).
        sequences_per_machine: Parallel sequences the memory model fits in the machine's memory
            (None: no machine memory given, or no memory-model record).
        level: The load level the goodput is from.
        missing: Why `machines` is None.
    """

    request_rate_rps: float | None
    goodput_rps: float | None = None
    goodput_rps_low: float | None = None
    goodput_rps_high: float | None = None
    machines: int | None = None
    machines_low: int | None = None
    machines_high: int | None = None
    per_hour: float | None = None
    per_hour_low: float | None = None
    per_hour_high: float | None = None
    per_1000: float | None = None
    per_1000_low: float | None = None
    per_1000_high: float | None = None
    sequences_per_machine: int | None = None
    level: str | None = None
    missing: str | None = None


def not_priced(rate_rps: float | None, why: str) -> MachineCost:
    """A variant's machines when the prices lack what they need (`why` names the key)."""
    return MachineCost(request_rate_rps=rate_rps, missing=f"missing: {why}")


def _priced(machines: int | None, price_per_hour: float) -> float | None:
    return None if machines is None else machines * price_per_hour


def _per_1000(per_hour: float | None, rate_rps: float) -> float | None:
    return None if per_hour is None else per_hour / (rate_rps * 3.6)


def machine_cost(
    *,
    rate_rps: float,
    price_per_hour: float,
    goodput: tuple[float | None, float | None, float | None],
    level: str | None = None,
    sequences_per_machine: int | None = None,
    missing: str | None = None,
) -> MachineCost:
    """The machines and their cost at `rate_rps`, from one machine's goodput (point, low, high).

    Args:
        rate_rps: The request rate to serve.
        price_per_hour: One machine's price per hour.
        goodput: One machine's goodput and its interval; (None, None, None) when not measured.
        level: The load level it was measured at.
        sequences_per_machine: The memory model's sequences in the machine's memory, shown beside.
        missing: Why there is no goodput (kept when `goodput` is not measured).
    """
    point, low, high = goodput
    machines = machines_for(rate_rps, point)
    if sequences_per_machine == 0:
        machines, missing = None, "does not fit: not one sequence fits in the machine's memory"
    elif machines is None:
        missing = missing or "not measured: no goodput within the latency targets"
    fewest = None if machines is None else machines_for(rate_rps, high)
    most = None if machines is None else machines_for(rate_rps, low)
    per_hour = [_priced(n, price_per_hour) for n in (machines, fewest, most)]
    return MachineCost(
        request_rate_rps=rate_rps,
        goodput_rps=point,
        goodput_rps_low=low,
        goodput_rps_high=high,
        machines=machines,
        machines_low=fewest,
        machines_high=most,
        per_hour=per_hour[0],
        per_hour_low=per_hour[1],
        per_hour_high=per_hour[2],
        per_1000=_per_1000(per_hour[0], rate_rps),
        per_1000_low=_per_1000(per_hour[1], rate_rps),
        per_1000_high=_per_1000(per_hour[2], rate_rps),
        sequences_per_machine=sequences_per_machine,
        level=level,
        missing=None if machines is not None else missing,
    )
