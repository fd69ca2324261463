"""Expected cost per 1,000 extractions: each ingredient priced from per-case figures.

A team's prices (`CostPrices`: review, retry call, node and memory per hour, energy, traffic) turn
each case's figures (`CaseFigures`) into a cost per ingredient:

- `review`: the case's wrong fields (a field is wrong when it scores below 1), priced per field,
  or the case priced once when any field is wrong; labeled cases only;
- `retries`: model calls beyond the first (repairs and retried calls), each priced;
- `node` and `memory`: the hours of a node the case holds, `total_s / concurrency` (cases in flight
  share it), times the node's price per hour, or the resident model memory's price per GiB-hour.
  When a load test measured the node time per extraction at the level that serves the traffic
  (`busy_per_extraction_s`: 1 / its requests per second), the cases' hours are scaled to average
  that. With a traffic (`extractions_per_hour`) the node is paid while idle too: the hours per
  case are scaled so that they average `max(busy, 1 / traffic)`;
- `energy`: generated tokens, priced per 1,000.

The expected cost per 1,000 extractions is 1,000 times the mean over cases. Against the
reference, each ingredient's delta is the mean per-case difference over the paired cases, with
its paired bootstrap interval (`evaluators.statistics.bootstrap_interval`). An ingredient without
a price is "not counted"; one whose figures were not measured is "not measured" (None), never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from evaluators.statistics import Interval, bootstrap_interval

__all__ = [
    "INGREDIENTS",
    "CaseFigures",
    "CostIngredient",
    "CostPrices",
    "VariantCosts",
    "break_even_wrong_case_rate",
    "variant_costs",
]

INGREDIENTS = ("review", "retries", "node", "memory", "energy")
PER = 1000
"""Costs are per this many extractions."""
_HOUR_S = 3600.0


class CostPrices(Protocol):
    """What things cost (`quantgate.inputs._prices.Prices` is one); None: not priced."""

    @property
    def review_per_case(self) -> float | None: ...
    @property
    def review_per_field(self) -> Mapping[str, float] | None: ...
    @property
    def retry_call(self) -> float | None: ...
    @property
    def node_per_hour(self) -> float | None: ...
    @property
    def memory_per_gib_hour(self) -> float | None: ...
    @property
    def energy_per_1k_tokens(self) -> float | None: ...
    @property
    def extractions_per_hour(self) -> float | None: ...

    def field_price(self, field: str) -> float | None:
        """The review price of one wrong field (None: not priced)."""
        ...


@dataclass(frozen=True, kw_only=True)
class CaseFigures:
    """One case of one variant, as its costs are priced.

    Attributes:
        wrong_fields: The fields scoring below 1 against the gold; None for an unlabeled case.
        extra_calls: Model calls beyond the first (repairs and retries); None: not recorded.
        output_tokens: Tokens generated over all attempts; None: not measured.
        busy_s: Node seconds the case held: its total time over the cases in flight.
    """

    wrong_fields: tuple[str, ...] | None
    extra_calls: int | None
    output_tokens: int | None
    busy_s: float | None


@dataclass(frozen=True, kw_only=True)
class CostIngredient:
    """One ingredient of a variant's expected cost.

    Attributes:
        name: One of `INGREDIENTS`.
        per_1000: Expected cost per 1,000 extractions; None when not counted or not measured.
        cases: Cases it is computed over.
        delta: Minus the reference's, per 1,000, over the cases both measured (None for the
            reference, or with no such case).
        interval: The delta's paired bootstrap interval.
        missing: Why `per_1000` is None ("not counted: ...", "not measured: ...").
    """

    name: str
    per_1000: float | None
    cases: int = 0
    delta: float | None = None
    interval: Interval | None = None
    missing: str | None = None


@dataclass(frozen=True, kw_only=True)
class VariantCosts:
    """A variant's ingredients and their total (None when a counted ingredient was not measured,
    or none is counted), with the total's paired delta against the reference."""

    ingredients: tuple[CostIngredient, ...]
    total_per_1000: float | None
    total_delta: float | None = None
    total_interval: Interval | None = None
    missing: str | None = None

    def ingredient(self, name: str) -> CostIngredient:
        """The ingredient called `name`."""
        return next(i for i in self.ingredients if i.name == name)


Pricer = Callable[[CaseFigures], float | None]


def _review(prices: CostPrices) -> Pricer | None:
    per_case = prices.review_per_case
    if per_case is not None:
        return lambda c: None if c.wrong_fields is None else per_case * bool(c.wrong_fields)
    if prices.review_per_field is None:
        return None

    def per_field(case: CaseFigures) -> float | None:
        if case.wrong_fields is None:
            return None
        return sum(prices.field_price(f) or 0.0 for f in case.wrong_fields)

    return per_field


def _pricers(prices: CostPrices, *, memory_gib: float | None, hours_scale: float) -> dict[str, Pricer | str]:
    """Each ingredient's per-case price, or why it is not counted / not measured."""

    def per_hour(rate: float) -> Pricer:
        return lambda c: None if c.busy_s is None else rate * c.busy_s / _HOUR_S * hours_scale

    retry, node, memory, energy = (
        prices.retry_call, prices.node_per_hour, prices.memory_per_gib_hour, prices.energy_per_1k_tokens
    )  # fmt: skip
    review = _review(prices)
    pricers: dict[str, Pricer | str] = {
        "review": review or "not counted: no review_per_case or review_per_field",
        "retries": (lambda c: None if c.extra_calls is None else retry * c.extra_calls)
        if retry is not None
        else "not counted: no retry_call",
        "node": per_hour(node) if node is not None else "not counted: no node_per_hour",
        "energy": (lambda c: None if c.output_tokens is None else energy * c.output_tokens / 1000)
        if energy is not None
        else "not counted: no energy_per_1k_tokens",
    }
    if memory is None:
        pricers["memory"] = "not counted: no memory_per_gib_hour"
    elif memory_gib is None:
        pricers["memory"] = "not measured: the model's resident memory"
    else:
        pricers["memory"] = per_hour(memory * memory_gib)
    return pricers


def _hours_scale(cases: Sequence[CaseFigures], traffic: float | None, measured_s: float | None) -> float:
    """How much a case's busy hours are scaled: to the node time a load test measured per
    extraction (when given), then up so that a node serving `traffic` is paid idle too."""
    busy = [c.busy_s for c in cases if c.busy_s is not None]
    mean_s = sum(busy) / len(busy) if busy else 0.0
    if mean_s <= 0:
        return 1.0
    scale = 1.0 if measured_s is None else measured_s / mean_s
    if traffic is None:
        return scale
    mean_hours = mean_s * scale / _HOUR_S
    return scale * max(1.0, 1.0 / (traffic * mean_hours))


def _per_case(
    cases: Mapping[str, CaseFigures], prices: CostPrices, memory_gib: float | None, busy_s: float | None
) -> dict[str, dict[str, float] | str]:
    """Each ingredient's cost per case id (the cases it measured), or why it has none."""
    scale = _hours_scale(list(cases.values()), prices.extractions_per_hour, busy_s)
    out: dict[str, dict[str, float] | str] = {}
    for name, pricer in _pricers(prices, memory_gib=memory_gib, hours_scale=scale).items():
        if isinstance(pricer, str):
            out[name] = pricer
            continue
        costs = {case_id: cost for case_id, figures in cases.items() if (cost := pricer(figures)) is not None}
        out[name] = costs or f"not measured: no case has the figures {name} is priced from"
    return out


def _mean(values: Sequence[float]) -> float | None:
    return PER * sum(values) / len(values) if values else None


def _paired(
    own: Mapping[str, float] | None, reference: Mapping[str, float] | None, confidence: float
) -> tuple[float | None, Interval | None]:
    """The mean per-case difference (per 1,000) over the cases both have, and its paired interval."""
    if own is None or reference is None:
        return None, None
    deltas = [PER * (own[c] - reference[c]) for c in own if c in reference]
    if not deltas:
        return None, None
    return sum(deltas) / len(deltas), bootstrap_interval(deltas, confidence=confidence)


def _table(costs: Mapping[str, dict[str, float] | str] | None, name: str) -> dict[str, float] | None:
    found = None if costs is None else costs[name]
    return None if isinstance(found, str) else found


def variant_costs(
    *,
    cases: Mapping[str, CaseFigures],
    prices: CostPrices,
    memory_gib: float | None,
    reference_cases: Mapping[str, CaseFigures] | None = None,
    reference_memory_gib: float | None = None,
    busy_per_extraction_s: float | None = None,
    reference_busy_per_extraction_s: float | None = None,
    confidence: float = 0.95,
) -> VariantCosts:
    """A variant's expected cost per 1,000 extractions, each ingredient with its paired delta.

    Args:
        cases: The variant's figures by case id.
        prices: The team's prices.
        memory_gib: The variant's resident model memory (None: not measured).
        reference_cases: The reference's figures by case id (None: this is the reference).
        reference_memory_gib: The reference's resident model memory.
        busy_per_extraction_s: Node seconds per extraction a load test measured at the level
            that serves the traffic (None: the cases' own `busy_s` are used as they are).
        reference_busy_per_extraction_s: The same for the reference.
        confidence: Coverage of the bootstrap intervals.
    """
    own = _per_case(cases, prices, memory_gib, busy_per_extraction_s)
    ref = (
        None
        if reference_cases is None
        else _per_case(reference_cases, prices, reference_memory_gib, reference_busy_per_extraction_s)
    )
    ingredients = []
    for name in INGREDIENTS:
        costs = own[name]
        if isinstance(costs, str):
            ingredients.append(CostIngredient(name=name, per_1000=None, missing=costs))
            continue
        delta, interval = _paired(costs, _table(ref, name), confidence)
        ingredients.append(
            CostIngredient(
                name=name,
                per_1000=_mean(list(costs.values())),
                cases=len(costs),
                delta=delta,
                interval=interval,
            )
        )
    return _with_total(tuple(ingredients), own, ref, confidence)


def _with_total(
    ingredients: tuple[CostIngredient, ...],
    own: Mapping[str, dict[str, float] | str],
    ref: Mapping[str, dict[str, float] | str] | None,
    confidence: float,
) -> VariantCosts:
    counted = [i for i in ingredients if not (i.missing or "").startswith("not counted")]
    if not counted:
        return VariantCosts(ingredients=ingredients, total_per_1000=None, missing="no price is given")
    unmeasured = [i.name for i in counted if i.per_1000 is None]
    if unmeasured:
        return VariantCosts(
            ingredients=ingredients, total_per_1000=None, missing=f"not measured: {', '.join(unmeasured)}"
        )
    total = sum(i.per_1000 or 0.0 for i in counted)
    names = [i.name for i in counted]
    per_case = _case_totals(own, names)
    theirs = None if ref is None else _case_totals(ref, names)
    delta, interval = _paired(per_case, theirs, confidence)
    return VariantCosts(
        ingredients=ingredients, total_per_1000=total, total_delta=delta, total_interval=interval
    )


def _case_totals(
    costs: Mapping[str, dict[str, float] | str], names: Sequence[str]
) -> dict[str, float] | None:
    """Per case, the sum of the named ingredients, over the cases that have them all."""
    tables = [costs[name] for name in names]
    if any(isinstance(t, str) for t in tables):
        return None
    shared = set.intersection(*(set(t) for t in tables if not isinstance(t, str)))
    return {c: sum(t[c] for t in tables if not isinstance(t, str)) for c in shared}


def break_even_wrong_case_rate(
    *, variant: VariantCosts, reference: VariantCosts, wrong_case_rate: float | None
) -> float | None:
    """The share of cases with a wrong field above which the variant costs more than the reference.

    The variant's other ingredients are held as measured, and each wrong case costs what one
    did in the run (its review cost per 1,000 over its wrong-case rate). None when review is not
    priced, a total is not measured, or the run had no wrong case to price one by; clipped to
    [0, 1] (0: it costs more even without a wrong case, 1: it stays cheaper if every case is).
    """
    review = variant.ingredient("review").per_1000
    if review is None or variant.total_per_1000 is None or reference.total_per_1000 is None:
        return None
    if not wrong_case_rate:
        return None
    per_wrong_case = review / wrong_case_rate  # per 1,000 extractions at a rate of 1
    others = variant.total_per_1000 - review
    return min(max((reference.total_per_1000 - others) / per_wrong_case, 0.0), 1.0)
