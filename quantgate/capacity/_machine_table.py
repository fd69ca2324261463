"""The machines each variant needs for the team's request rate, priced (the cost table's `machines`).

One machine's capacity is the goodput the load test measured at the variant's capacity level
(`quantgate.capacity._capacity_checks.goodput_level`: its highest-rate Poisson level), within the
latency targets; machines = ceil(request_rate_rps / goodput), and the goodput's interval gives the
machines' (its lower bound the most machines). The memory model's parallel sequences in
`machine_memory_gib` are shown beside; they do not stand in for a goodput (a sequence count is not a
rate: turning it into one needs the request's duration, which is what the load test measures),
except that a variant the machine cannot hold one sequence of needs no count: it does not fit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from evaluators.machines import MachineCost, machine_cost, not_priced
from quantgate.capacity._capacity_checks import goodput_level, recorded_capacity
from quantgate.inputs._prices import Prices
from quantgate.rundir._loadtest_section import LoadSection
from quantgate.rundir._summary import VariantMetadata

__all__ = ["machine_table"]


def _sequences(line: VariantMetadata | None, prices: Prices, context: int) -> int | None:
    if line is None or prices.machine_memory_gib is None:
        return None
    figure = recorded_capacity(
        line.memory_model, line.kv_cache, memory_gib=prices.machine_memory_gib, context=context
    )
    return None if figure is None else figure.sequences


def machine_table(
    names: Iterable[str],
    *,
    prices: Prices,
    load: LoadSection | None,
    lines: Mapping[str, VariantMetadata],
    context: int,
) -> dict[str, MachineCost]:
    """Each variant's machines and their cost; empty when the prices name no machine key.

    Args:
        names: The evaluated variants.
        prices: The team's prices (`request_rate_rps`, `machine_price_per_hour`, `machine_memory_gib`).
        load: The run's load test (its goodput per level).
        lines: The variants' lines of variants.json (their memory-model records).
        context: Tokens per sequence for the memory model's sequences (the gates' `capacity_context`).
    """
    rate, price = prices.request_rate_rps, prices.machine_price_per_hour
    if rate is None and price is None and prices.machine_memory_gib is None:
        return {}
    table = {}
    for name in names:
        if rate is None or price is None:
            table[name] = not_priced(rate, "request_rate_rps" if rate is None else "machine_price_per_hour")
            continue
        level = goodput_level(load, name)
        why = "not measured: no Poisson load level" if level is None else None
        table[name] = machine_cost(
            rate_rps=rate,
            price_per_hour=price,
            goodput=(level.goodput_rps, level.goodput_rps_low, level.goodput_rps_high)
            if level
            else (None,) * 3,
            level=level.name if level else None,
            sequences_per_machine=_sequences(lines.get(name), prices, context),
            missing=why,
        )
    return table
