"""The decision's cost table: each variant's expected cost per 1,000 extractions, from its records.

Each record gives a case's figures (`evaluators.costs.CaseFigures`): its wrong fields against
the gold, its calls beyond the first, its generated tokens, and the node time it held (its total
time over the cases the variant had in flight). The resident memory is the variant's footprint,
as the recommendation ranks it. When the run has a load test (`run --load`), the node time per
extraction is the load level's that serves the traffic (`load_level`). `evaluators.costs` prices
them.
"""

from __future__ import annotations

from collections.abc import Mapping

from evaluators.costs import (
    CaseFigures,
    VariantCosts,
    break_even_wrong_case_rate,
    variant_costs,
)
from quantgate.capacity._machine_table import machine_table
from quantgate.inputs._prices import Prices
from quantgate.rundir._decision import CostTable, RollbackSignal
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._loadtest_section import LoadLevelEntry, LoadSection
from quantgate.rundir._summary import VariantEntry, VariantMetadata

__all__ = [
    "METHOD",
    "break_even_signal",
    "case_figures",
    "cost_table",
    "load_level",
    "wrong_case_rate",
]

METHOD = (
    "per case, from records.jsonl: review = the review price when any field scores below 1 against "
    "the gold (or each such field's price), labeled cases only; retries = (attempts - 1 + retried "
    "calls) x the call price; node and memory = total_s / the variant's cases in flight, in hours, x "
    "the price per hour (memory: x the footprint in GiB), scaled up to max(busy, 1 / traffic) per "
    "case when a traffic is given; energy = generated tokens / 1000 x its price. Expected cost = "
    "1000 x the mean over cases; delta = 1000 x the mean paired difference to the reference over "
    "the cases both measured, with a percentile bootstrap interval (10000 resamples, seed 0)"
)


def case_figures(record: CaseRecord, *, concurrency: int | None) -> CaseFigures:
    """What a record gives for pricing its case."""
    labeled = bool(record.fields)  # fields are scored against the gold only
    retries = record.retries or 0
    return CaseFigures(
        wrong_fields=tuple(f for f, score in record.fields.items() if score < 1.0) if labeled else None,
        extra_calls=max(record.attempts - 1, 0) + retries if record.attempts else None,
        output_tokens=record.output_tokens,
        busy_s=None if record.total_s is None else record.total_s / max(concurrency or 1, 1),
    )


def wrong_case_rate(records: Mapping[str, CaseRecord]) -> float | None:
    """The share of labeled cases with at least one field scoring below 1 (None: no labeled case)."""
    labeled = [r for r in records.values() if r.fields]
    if not labeled:
        return None
    return sum(any(score < 1.0 for score in r.fields.values()) for r in labeled) / len(labeled)


def load_level(section: LoadSection | None, variant: str, traffic: float | None) -> LoadLevelEntry | None:
    """The load level whose throughput sets the variant's node time per extraction: the one with
    the fewest requests in flight that serves the traffic, else (or without a traffic) the one with
    the most requests per second; None without a load test of the variant."""
    entry = next((v for v in section.variants if v.name == variant), None) if section else None
    levels = [lv for lv in (entry.levels if entry else []) if lv.requests_per_s]
    if not levels:
        return None
    serving = sorted(
        (lv for lv in levels if traffic is not None and (lv.requests_per_s or 0) * 3600 >= traffic),
        key=lambda lv: lv.concurrency,
    )
    return serving[0] if serving else max(levels, key=lambda lv: lv.requests_per_s or 0.0)


def cost_table(
    *,
    entries: Mapping[str, VariantEntry],
    records: Mapping[str, Mapping[str, CaseRecord]],
    footprints_mb: Mapping[str, float | None],
    reference: str,
    prices: Prices,
    confidence: float,
    load: LoadSection | None = None,
    lines: Mapping[str, VariantMetadata] | None = None,
    capacity_context: int = 4096,
) -> CostTable:
    """Every evaluated variant's costs, each against the reference.

    Args:
        entries: The evaluated variants' summary entries (their `concurrency`), by name.
        records: Their records by name, then case id.
        footprints_mb: Their resident model memory (MiB; None: not measured).
        reference, prices: The reference's name; the team's prices.
        confidence: Coverage of the paired intervals.
        load: The run's load test, if any: its throughput sets the node time, its goodput the machines.
        lines, capacity_context: variants.json's lines and the gates' context, for `machine_table`.
    """

    def figures(name: str) -> dict[str, CaseFigures]:
        concurrency = entries[name].concurrency
        return {c: case_figures(r, concurrency=concurrency) for c, r in records.get(name, {}).items()}

    def gib(name: str) -> float | None:
        return None if (footprint := footprints_mb.get(name)) is None else footprint / 1024

    levels = {name: load_level(load, name, prices.extractions_per_hour) for name in entries}

    def busy_s(name: str) -> float | None:
        level = levels.get(name)
        return 1.0 / level.requests_per_s if level is not None and level.requests_per_s else None

    base = figures(reference)
    machines = machine_table(entries, prices=prices, load=load, lines=lines or {}, context=capacity_context)
    table = {
        name: variant_costs(
            cases=figures(name),
            prices=prices,
            memory_gib=gib(name),
            reference_cases=None if name == reference else base,
            reference_memory_gib=gib(reference),
            busy_per_extraction_s=busy_s(name),
            reference_busy_per_extraction_s=busy_s(reference),
            confidence=confidence,
        )
        for name in entries
    }
    return CostTable(
        currency=prices.currency,
        prices=prices.model_dump(exclude_none=True),
        method=METHOD,
        node_time={name: _node_time(levels.get(name)) for name in entries},
        variants=table,
        machines=machines,
    )


def _node_time(level: LoadLevelEntry | None) -> str:
    if level is None:
        return "the run's cases: total_s / cases in flight (no load test of the variant)"
    return (
        f"load level {level.name}: {level.concurrency} in flight, {level.requests_per_s:.3g} requests/s, "
        f"so {1 / (level.requests_per_s or 1):.3g} s per extraction"
    )


def break_even_signal(
    *, table: CostTable, variant: str, reference: str, records: Mapping[str, CaseRecord]
) -> RollbackSignal | None:
    """The rollback signal of the chosen variant's cost break-even (None: not computable, or it is
    the reference): above this share of cases with a wrong field, it costs more than the reference."""
    costs: VariantCosts | None = table.variants.get(variant)
    ref = table.variants.get(reference)
    rate = wrong_case_rate(records)
    if variant == reference or costs is None or ref is None or rate is None:
        return None
    threshold = break_even_wrong_case_rate(variant=costs, reference=ref, wrong_case_rate=rate)
    if threshold is None or costs.total_per_1000 is None or ref.total_per_1000 is None:
        return None
    unit = f" {table.currency}" if table.currency else ""
    return RollbackSignal(
        metric="wrong_case_rate",
        direction="above",
        threshold=threshold,
        measured=rate,
        derivation=(
            f"cost break-even: {variant} costs {costs.total_per_1000:.4g}{unit} per 1,000 extractions at "
            f"{rate:.1%} cases with a wrong field, {reference} {ref.total_per_1000:.4g}{unit}; with each "
            "wrong case priced as in the run and the other ingredients as measured, the totals meet here"
        ),
    )
