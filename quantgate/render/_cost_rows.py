"""The decision's cost table for people: a row per variant, each cell the expected cost per 1,000
extractions and its paired delta to the reference with the interval (decision.md, the report and
`quantgate decide` show it; `quantgate.decide._cost_table` builds the table)."""

from __future__ import annotations

from evaluators.costs import INGREDIENTS
from evaluators.statistics import Interval
from quantgate.rundir._decision import CostTable

__all__ = ["cost_rows"]


def _money(value: float, *, sign: bool = False) -> str:
    """An amount: two decimals with thousands separators, small ones to 3 significant digits."""
    plus = "+" if sign else ""
    value = 0.0 if abs(value) < 1e-9 else value  # rounding noise of a difference, not a saving
    return f"{value:{plus},.2f}" if value == 0 or abs(value) >= 1 else f"{value:{plus}.3g}"


def _cost(value: float | None, delta: float | None, interval: Interval | None, missing: str | None) -> str:
    """A cell: the cost per 1,000, and its delta to the reference with the paired interval."""
    if value is None:
        return (missing or "not measured").split(":")[0]
    text = _money(value)
    if delta is None:
        return text
    text += f" ({_money(delta, sign=True)}"
    if interval is not None:
        text += f" [{_money(interval.low, sign=True)}, {_money(interval.high, sign=True)}]"
    return text + ")"


def cost_rows(table: CostTable) -> list[list[str]]:
    """The cost table for people: a header, then a row per variant; each cell the expected cost
    per 1,000 extractions and, in parentheses, the paired delta to the reference with its interval."""
    unit = f" ({table.currency})" if table.currency else ""
    header = ["variant", *INGREDIENTS, f"total per 1,000{unit}"]
    rows = [header]
    for name, costs in table.variants.items():
        cells = [_cost(i.per_1000, i.delta, i.interval, i.missing) for i in costs.ingredients]
        total = _cost(costs.total_per_1000, costs.total_delta, costs.total_interval, costs.missing)
        rows.append([name, *cells, total])
    return rows
