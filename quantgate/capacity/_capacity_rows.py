"""The decision's capacity section for people: per variant, the parallel sequences the memory model
fits at the gates' context and budget, its KV bytes per token and weights, and the goodput of each
load level; then, with machine prices, the machines each variant needs for the request rate.
decision.md and the HTML report both show it (`quantgate.decide` computes the figures).
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluators.machines import MachineCost
from quantgate._formatting import MISSING
from quantgate.capacity._shape_record import DEFAULT_CAPACITY_MEMORY_GIB
from quantgate.rundir._decision import Decision
from quantgate.rundir._loadtest_section import LoadSection

__all__ = ["CapacitySection", "capacity_section"]

CAPACITY_NOTE = (
    "sequences: the most parallel sequences whose predicted RSS fits the budget (the memory model, from "
    "the model shape the run recorded; 255 is llama.cpp's limit per context); not measured: no record "
    "(a server variant, or a run before variants.json 4). goodput: requests per second within the "
    "load test's latency targets, with its exact Poisson interval; the gate judges the highest-rate "
    "Poisson level. See docs/decision.md."
)
MACHINE_NOTE = (
    "machines = ceil(rate / one machine's goodput), in brackets from the goodput interval's upper and "
    "lower bounds; priced per hour and per 1,000 requests at the rate, beside the per-case costs (not "
    "in their total). missing: a price or the goodput is not there, never 0."
)


@dataclass(frozen=True, kw_only=True)
class CapacitySection:
    """The section's text: a title and rows (the first the header) per table, and notes."""

    title: str
    rows: list[list[str]]
    note: str
    machine_title: str | None = None
    machine_rows: list[list[str]] | None = None
    machine_note: str = MACHINE_NOTE


def _goodput(load: LoadSection | None, variant: str) -> str:
    entry = next((v for v in load.variants if v.name == variant), None) if load else None
    shown = [
        f"{lv.name}: {lv.goodput_rps:.3g} [{lv.goodput_rps_low:.3g}, {lv.goodput_rps_high:.3g}]"
        if lv.goodput_rps_low is not None and lv.goodput_rps_high is not None
        else f"{lv.name}: {lv.goodput_rps:.3g}"
        for lv in (entry.levels if entry else [])
        if lv.goodput_rps is not None
    ]
    return "; ".join(shown) or "not measured"


def _range(low: float | None, high: float | None, template: str) -> str:
    if low is None and high is None:
        return ""
    shown_low = MISSING if low is None else template.format(low)
    shown_high = "no bound" if high is None else template.format(high)
    return f" [{shown_low}, {shown_high}]"


def _machine_row(name: str, cost: MachineCost) -> list[str]:
    if cost.machines is None:
        reason = (cost.missing or "missing").split(":")[0]
        goodput = MISSING if cost.goodput_rps is None else f"{cost.goodput_rps:.3g}"
        return [
            name,
            goodput,
            reason,
            reason,
            reason,
            MISSING if cost.sequences_per_machine is None else str(cost.sequences_per_machine),
        ]
    interval = _range(cost.goodput_rps_low, cost.goodput_rps_high, "{:.3g}")
    goodput = f"{cost.goodput_rps:.3g}{interval} ({cost.level})"
    return [
        name,
        goodput,
        f"{cost.machines}{_range(cost.machines_low, cost.machines_high, '{:d}')}",
        f"{cost.per_hour:,.2f}{_range(cost.per_hour_low, cost.per_hour_high, '{:,.2f}')}",
        f"{cost.per_1000:.3g}{_range(cost.per_1000_low, cost.per_1000_high, '{:.3g}')}",
        MISSING if cost.sequences_per_machine is None else str(cost.sequences_per_machine),
    ]


def _machines(decision: Decision) -> tuple[str | None, list[list[str]] | None]:
    table = decision.costs
    if table is None or not table.machines:
        return None, None
    rate = table.prices.get("request_rate_rps")
    unit = f" ({table.currency})" if table.currency else ""
    title = f"Machines for {rate:g} requests/s" if isinstance(rate, int | float) else "Machines"
    header = ["variant", "goodput per machine", "machines", f"per hour{unit}", f"per 1,000 requests{unit}",
              "sequences per machine"]  # fmt: skip
    return title, [header, *(_machine_row(name, cost) for name, cost in table.machines.items())]


def capacity_section(decision: Decision, load: LoadSection | None) -> CapacitySection | None:
    """The capacity section of a decision and the run's load section; None when no variant has a
    capacity figure, a goodput or a machine cost."""
    gates = decision.gates
    figures = {name: v.capacity for name, v in decision.variants.items() if v.status == "ok"}
    goodput = {name: _goodput(load, name) for name in figures}
    machine_title, machine_rows = _machines(decision)
    if (
        all(f is None for f in figures.values())
        and set(goodput.values()) <= {"not measured"}
        and not machine_rows
    ):
        return None
    budget = gates.capacity_memory_gib
    first = next((f for f in figures.values() if f is not None), None)
    memory_gib = first.memory_gib if first else budget or DEFAULT_CAPACITY_MEMORY_GIB
    where = "the gates' capacity_memory_gib" if budget is not None else "the default: no capacity_memory_gib"
    title = (
        f"Parallel sequences of {gates.capacity_context:,} tokens in {memory_gib:g} GiB ({where}), "
        "predicted by the memory model; goodput (requests/s) per load level, measured"
    )
    header = ["variant", "sequences", "KV cache", "KV B/token", "weights MiB", "goodput per level"]
    rows = [header]
    for name, figure in figures.items():
        if figure is None:
            rows.append([name, "not measured", MISSING, MISSING, MISSING, goodput[name]])
            continue
        rows.append([
            name, str(figure.sequences), figure.kv_cache, f"{figure.kv_bytes_per_token:,.0f}",
            f"{figure.weights_bytes / 2**20:,.0f}", goodput[name],
        ])  # fmt: skip
    return CapacitySection(
        title=title, rows=rows, note=CAPACITY_NOTE, machine_title=machine_title, machine_rows=machine_rows
    )
