"""How each variant's figures were taken: the machine's load during its rounds, the memory model
beside its measured peak. For the summary table `quantgate run` prints and for decision.md.

A variant whose latency or throughput comes, in part, from a round taken while the machine was
busy (`evaluators.machine_load`: other processes took more than 10% of the CPU, or steal did)
is flagged: its tokens/s carry `BUSY_MARK` in the table, and a line under it says how busy.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluators.machine_load import BUSY_OTHERS_SHARE, BUSY_STEAL_SHARE
from quantgate._formatting import MISSING, number, percent
from quantgate.rundir._round_loads import VariantLoad, variant_load
from quantgate.rundir._summary import RunSummary, VariantEntry

__all__ = ["BUSY_MARK", "MeasurementRows", "busy_lines", "is_busy", "measurement_rows"]

BUSY_MARK = "~"
"""Appended to the tokens/s of a variant some of whose rounds ran while the machine was busy."""

BUSY_RULE = (
    f"busy: other processes took more than {BUSY_OTHERS_SHARE:.0%} of the CPU (or steal more than "
    f"{BUSY_STEAL_SHARE:.0%}) while the variant's cases ran"
)


def is_busy(summary: RunSummary, name: str) -> bool:
    """Whether some of the variant's rounds ran while the machine was busy."""
    load = variant_load(summary.machine_load, name)
    return load is not None and load.busy


def _how_busy(name: str, load: VariantLoad) -> str:
    shown = load.steal_share_max is not None and load.steal_share_max >= 0.0005  # 0.1% and up
    steal = f", steal up to {percent(load.steal_share_max)}" if shown else ""
    return (
        f"{BUSY_MARK} {name}: latency and throughput partly taken while the machine was busy: other "
        f"processes took up to {percent(load.others_cpu_share_max)} of the CPU{steal} (1-minute load up "
        f"to {number(load.load_1min_max, '{:.1f}')}) in {load.busy_parts} of its {load.parts} round(s), "
        f"{load.busy_cases} case(s)"
    )


def busy_lines(summary: RunSummary) -> list[str]:
    """A line per variant flagged busy, then the rule (none when no variant is)."""
    lines = []
    for entry in summary.variants:
        load = variant_load(summary.machine_load, entry.name)
        if load is not None and load.busy:
            lines.append(_how_busy(entry.name, load))
    return [*lines, f"  ({BUSY_RULE})"] if lines else []


@dataclass(frozen=True, kw_only=True)
class MeasurementRows:
    """The measurement-conditions table: a header, a row per variant, and what it means."""

    header: list[str]
    rows: list[list[str]]
    note: str


def _row(entry: VariantEntry, load: VariantLoad | None) -> list[str]:
    check = entry.memory_model_check
    busy = MISSING if load is None else f"{load.busy_parts} of {load.parts}"
    return [
        entry.name,
        busy,
        percent(load.others_cpu_share_max if load else None),
        percent(load.steal_share_max if load else None),
        number(load.load_1min_max if load else None, "{:.1f}"),
        number(check.predicted_mb if check else None, "{:.0f}"),
        number(entry.memory_mb, "{:.0f}"),
        number(check.error if check else None, "{:+.1%}"),
    ]


def measurement_rows(summary: RunSummary) -> MeasurementRows | None:
    """The table; None when the run recorded neither the machine's load nor a memory prediction."""
    loads = {e.name: variant_load(summary.machine_load, e.name) for e in summary.variants}
    if not any(loads.values()) and not any(e.memory_model_check for e in summary.variants):
        return None
    header = ["variant", "busy rounds", "others' CPU max", "steal max", "load max",
              "predicted MiB", "peak MiB", "memory model error"]  # fmt: skip
    rows = [_row(e, loads[e.name]) for e in summary.variants if e.status == "ok"]
    note = (
        f"Busy rounds: the variant's rounds taken while the machine was busy, of those it ran ({BUSY_RULE}); "
        "others' CPU: CPU time of processes outside the run over wall time x cores, the highest of its "
        "rounds; load: the 1-minute load average (the run's own work included). Predicted MiB: the memory "
        "model's RSS at the run's context, slots and cache types (docs/capacity.md); peak MiB: the "
        f"measured peak; error: (predicted - peak) / peak. {MISSING}: not measured or not predictable "
        "(a server variant)."
    )
    return MeasurementRows(header=header, rows=rows, note=note)
