"""The machine's load while each variant ran each round: summary.json's `machine_load`.

A run in rounds reads the CPU counters before and after each variant's part of each round
(`quantgate.evaluate._cpu_readings`) and keeps one `RoundLoadEntry` per part: the round, the
variant, its cases, and the load (`evaluators.machine_load.MachineLoad`: other processes' share of
the CPU, steal, the load average, and whether the part was busy). `variant_load` sums a variant's
parts up for the tables: a variant whose latency and throughput come from a busy part says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from evaluators.machine_load import MachineLoad
from quantgate.rundir._lines import RunFileModel

__all__ = ["RoundLoadEntry", "VariantLoad", "variant_load"]


class _RoundPart(RunFileModel):
    """Which part of which round: the keys before the load figures."""

    round: int = Field(ge=1, description="The round, counted from 1 over the whole run (a resume goes on).")
    variant: str
    cases: int = Field(ge=0, description="Cases the variant finished in this part.")


class RoundLoadEntry(MachineLoad, _RoundPart):
    """The machine's load while one variant ran its cases of one round (`MachineLoad`), read on the
    node it ran on."""

    node_id: str | None = Field(
        default=None,
        description="The Ray node the variant ran on, whose load this is (read there, by its actor); None: "
        "the run's own machine (a local run).",
    )
    host: str | None = Field(default=None, description="That node's host name; None: the run's own machine.")


@dataclass(frozen=True, kw_only=True)
class VariantLoad:
    """A variant's parts of the rounds, summed up.

    Attributes:
        parts: Its parts with a reading.
        busy_parts: Those taken while the machine was busy.
        busy_cases: Cases it finished in them.
        others_cpu_share_max: Other processes' highest share of the CPU in one of its parts.
        steal_share_max: The highest steal share.
        load_1min_max: The highest 1-minute load average at the end of one of its parts.
    """

    parts: int
    busy_parts: int
    busy_cases: int
    others_cpu_share_max: float | None
    steal_share_max: float | None
    load_1min_max: float | None

    @property
    def busy(self) -> bool:
        """Some of its figures come from a part taken while the machine was busy."""
        return self.busy_parts > 0


def _highest(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def variant_load(entries: list[RoundLoadEntry] | None, variant: str) -> VariantLoad | None:
    """The variant's parts summed up; None when none was read (a run before it was recorded, a
    reference served from the cache, a Ray run evaluated whole)."""
    mine = [e for e in entries or [] if e.variant == variant]
    if not mine:
        return None
    busy = [e for e in mine if e.busy]
    return VariantLoad(
        parts=len(mine),
        busy_parts=len(busy),
        busy_cases=sum(e.cases for e in busy),
        others_cpu_share_max=_highest([e.others_cpu_share for e in mine]),
        steal_share_max=_highest([e.steal_share for e in mine]),
        load_1min_max=_highest([e.load_1min for e in mine]),
    )
