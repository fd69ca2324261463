"""The capacity gates: parallel sequences in a memory budget (the memory model) and goodput under load.

`min_parallel_sequences` is judged on the model shape the run recorded in variants.json
(`quantgate.capacity._shape_record`), at the gates' `capacity_context` and `capacity_memory_gib`, with
the variant's own KV-cache type; `min_goodput_rps` on the load test's goodput at the variant's
capacity level (`goodput_level`). A variant without the figure (a server backend, a run without a
load test or latency targets, an older run) is `not_measured`, which never passes.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluators.statistics import Interval
from quantgate.capacity._shape_record import (
    DEFAULT_CAPACITY_MEMORY_GIB,
    CapacityFigure,
    MemoryModelEntry,
    capacity_figure,
)
from quantgate.inputs._gates import Gates
from quantgate.inputs._variants import KVCache
from quantgate.rundir._decision import GateResult, GateStatus
from quantgate.rundir._loadtest_section import LoadLevelEntry, LoadSection
from quantgate.rundir._store import Run

__all__ = [
    "CapacityInputs",
    "capacity_inputs",
    "goodput_level",
    "goodput_result",
    "parallel_sequences_result",
    "recorded_capacity",
]

GOODPUT_CONFIDENCE = 0.95
"""Coverage of the load test's goodput interval (exact Poisson, `evaluators.loadtest`)."""


def goodput_level(section: LoadSection | None, variant: str) -> LoadLevelEntry | None:
    """The load level whose goodput stands for the variant's capacity: its Poisson level with the
    highest offered rate (fixed before looking at the results: the largest of several lower bounds
    would not be a lower bound at the stated coverage); None without one."""
    entry = next((v for v in section.variants if v.name == variant), None) if section else None
    poisson = [lv for lv in (entry.levels if entry else []) if lv.arrivals == "poisson" and lv.rate_per_s]
    return max(poisson, key=lambda lv: lv.rate_per_s or 0.0) if poisson else None


@dataclass(frozen=True, kw_only=True)
class CapacityInputs:
    """What a variant's capacity gates and figures read of its run.

    Attributes:
        memory_model: Its memory-model record (variants.json), None without one.
        kv_cache: Its KV-cache type (None: f16).
        goodput_level: Its load level whose goodput is judged (`goodput_level`).
    """

    memory_model: MemoryModelEntry | None = None
    kv_cache: KVCache | None = None
    goodput_level: LoadLevelEntry | None = None

    def figure(self, gates: Gates) -> CapacityFigure | None:
        """Its capacity at the gates' context and budget (`DEFAULT_CAPACITY_MEMORY_GIB` when they set
        none)."""
        memory_gib = gates.capacity_memory_gib or DEFAULT_CAPACITY_MEMORY_GIB
        return recorded_capacity(
            self.memory_model, self.kv_cache, memory_gib=memory_gib, context=gates.capacity_context
        )


def capacity_inputs(run: Run, variant: str) -> CapacityInputs:
    """A variant's capacity inputs: its line of variants.json and its goodput level in the summary."""
    line = run.variants.by_name().get(variant)
    level = goodput_level(run.summary.load, variant)
    if line is None:
        return CapacityInputs(goodput_level=level)
    return CapacityInputs(memory_model=line.memory_model, kv_cache=line.kv_cache, goodput_level=level)


def recorded_capacity(
    memory_model: MemoryModelEntry | None, kv_cache: KVCache | None, *, memory_gib: float, context: int
) -> CapacityFigure | None:
    """A recorded variant's capacity at its own KV-cache type (f16 when it sets none); None without
    a record."""
    if memory_model is None:
        return None
    type_k, type_v = (kv_cache.k, kv_cache.v) if kv_cache else ("f16", "f16")
    return capacity_figure(memory_model, memory_gib=memory_gib, context=context, type_k=type_k, type_v=type_v)


def _not_measured(gate: str, threshold: float, why: str) -> GateResult:
    return GateResult(gate=gate, status="not_measured", value=None, threshold=threshold, evidence=why)


def parallel_sequences_result(
    gate: str, threshold: float, memory_model: MemoryModelEntry | None, kv_cache: KVCache | None, gates: Gates
) -> GateResult:
    """Pass when the memory model fits at least `threshold` sequences of the gates' context in their
    budget."""
    if memory_model is None or gates.capacity_memory_gib is None:
        why = "no memory-model record (not an embedded GGUF, or a run written before variants.json 4)"
        return _not_measured(gate, threshold, why)
    figure = recorded_capacity(
        memory_model, kv_cache, memory_gib=gates.capacity_memory_gib, context=gates.capacity_context
    )
    assert figure is not None  # a record gives a figure
    ok = figure.sequences >= threshold
    return GateResult(
        gate=gate,
        status="pass" if ok else "fail",
        value=float(figure.sequences),
        threshold=threshold,
        evidence=f"{figure.sequences} parallel sequences of {figure.context:,} tokens fit in "
        f"{figure.memory_gib:g} GiB (KV cache {figure.kv_cache}, {figure.kv_bytes_per_token:,.0f} B/token; "
        f"memory model), {'≥' if ok else '<'} {threshold:g}",
    )


def goodput_result(gate: str, threshold: float, level: LoadLevelEntry | None) -> GateResult:
    """Pass when the goodput interval's lower bound is at or above `threshold`, fail when its upper
    bound is below, else inconclusive."""
    if level is None:
        return _not_measured(
            gate, threshold, "no Poisson load level of the variant (quantgate load --arrivals poisson)"
        )
    if level.goodput_rps is None or level.goodput_rps_low is None or level.goodput_rps_high is None:
        return _not_measured(
            gate, threshold, f"load level {level.name}: no latency targets, goodput not measured"
        )
    low, high = level.goodput_rps_low, level.goodput_rps_high
    status: GateStatus = "pass" if low >= threshold else "fail" if high < threshold else "inconclusive"
    return GateResult(
        gate=gate,
        status=status,
        value=level.goodput_rps,
        threshold=threshold,
        interval=Interval(
            low=low, high=high, confidence=GOODPUT_CONFIDENCE, method="exact Poisson (Garwood)"
        ),
        evidence=f"load level {level.name} ({level.rate_per_s:g} requests/s offered): goodput "
        f"{level.goodput_rps:.3g} requests/s, CI [{low:.3g}, {high:.3g}] against {threshold:g}",
    )
