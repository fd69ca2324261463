"""Typed memory-model record of a variant in variants.json: what `decide` needs to judge capacity.

An embedded variant's model file is read at the start of a run (its GGUF header, about 0.3 s):
its shape (`evaluators.memory_model.ModelShape`) and its size are kept in the variant's line, so
that the capacity gate, the cost of machines and the report's capacity section are computed from
the run directory alone, without the model file. A variant without one (a server backend, a run
written before variants.json 4) has no record: its capacity is not measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from evaluators.memory_model import (
    KV_TYPE_BYTES,
    PROCESS_BASELINE_MIB,
    ModelShape,
    max_sequences,
    predict_memory,
)
from quantgate.rundir._lines import RunFileModel

__all__ = [
    "PROCESS_BASELINE_BYTES",
    "CapacityFigure",
    "MemoryModelCheck",
    "MemoryModelEntry",
    "capacity_figure",
    "memory_model_check",
]

DEFAULT_CAPACITY_MEMORY_GIB = 2.0
"""The budget a decision's capacity figure is shown at when the gates set no `capacity_memory_gib`."""

PROCESS_BASELINE_BYTES = round(PROCESS_BASELINE_MIB * 2**20)
"""The process's RSS before a model loads (`evaluators.memory_model.PROCESS_BASELINE_MIB`)."""


class MemoryModelEntry(RunFileModel):
    """What the memory model needs of an embedded variant, read from its model file when the run started.

    Attributes:
        shape: The model's layers, heads, widths and vocabulary, from the GGUF header.
        weights_bytes: The model file's size (the weights the process holds).
    """

    shape: ModelShape = Field(description="The model's shape from its GGUF header (evaluators.memory_model).")
    weights_bytes: int = Field(ge=0, description="The model file's size in bytes.")


class CapacityFigure(RunFileModel):
    """A variant's capacity at one memory budget and context, per the memory model.

    Attributes:
        memory_gib: The budget (GiB).
        context: Tokens of context of each sequence.
        sequences: The most parallel sequences that fit (0: not even one).
        kv_cache: The K and V cache types it is for (`f16`, or `K q8_0, V f16`).
        kv_bytes_per_token: KV bytes of one token in every layer at those types.
        weights_bytes: The model file's size.
    """

    memory_gib: float
    context: int
    sequences: int
    kv_cache: str
    kv_bytes_per_token: float
    weights_bytes: int


def capacity_figure(
    entry: MemoryModelEntry,
    *,
    memory_gib: float,
    context: int,
    type_k: str = "f16",
    type_v: str = "f16",
    baseline_bytes: int = PROCESS_BASELINE_BYTES,
) -> CapacityFigure:
    """The parallel sequences of `context` tokens a recorded variant fits in `memory_gib`, as
    `quantgate capacity` computes them from the model file (`evaluators.memory_model.max_sequences`).

    Raises:
        MemoryModelError: An unknown cache type.
    """
    shape = entry.shape
    fits = max_sequences(
        shape, budget_bytes=round(memory_gib * 2**30), weights_bytes=entry.weights_bytes,
        baseline_bytes=baseline_bytes, context=context, type_k=type_k, type_v=type_v,
    )  # fmt: skip
    return CapacityFigure(
        memory_gib=memory_gib,
        context=context,
        sequences=fits,
        kv_cache=type_k if type_k == type_v else f"K {type_k}, V {type_v}",
        kv_bytes_per_token=sum(shape.kv_bytes_per_cell(type_k=type_k, type_v=type_v)),
        weights_bytes=entry.weights_bytes,
    )


class MemoryModelCheck(RunFileModel):
    """The memory model's prediction for a variant as it ran, beside its measured peak RSS.

    Attributes:
        predicted_mb: The predicted RSS (MiB) at the run's context, sequences and cache types.
        measured_mb: The measured peak RSS of the process holding it (MiB, `memory_mb`).
        error: (predicted - measured) / measured: above 0 the model over-predicts.
        context: Tokens of context of each sequence it was predicted at.
        sequences: Parallel sequences (slots) it was predicted at.
    """

    predicted_mb: float
    measured_mb: float
    error: float
    context: int
    sequences: int


def _cache_type(runtime: Mapping[str, Any], key: str) -> str:
    cache = runtime.get("kv_cache")
    value = cache.get(key) if isinstance(cache, Mapping) else None
    return value if isinstance(value, str) and value in KV_TYPE_BYTES else "f16"


def memory_model_check(
    entry: MemoryModelEntry | None, runtime: Mapping[str, Any] | None, measured_mb: float | None
) -> MemoryModelCheck | None:
    """The prediction for a variant at what its runtime recorded (`n_ctx` cells shared by `slots`
    sequences, its K and V cache types), beside `measured_mb`; None without a memory-model record
    (a server variant), a runtime that does not say its context, or a measured peak."""
    if entry is None or runtime is None or measured_mb is None or measured_mb <= 0:
        return None
    cells, slots = runtime.get("n_ctx"), runtime.get("slots")
    if not isinstance(cells, int) or cells < 1:
        return None
    sequences = slots if isinstance(slots, int) and slots >= 1 else 1
    context = max(cells // sequences, 1)
    predicted = predict_memory(
        entry.shape, weights_bytes=entry.weights_bytes, baseline_bytes=PROCESS_BASELINE_BYTES,
        context=context, sequences=sequences,
        type_k=_cache_type(runtime, "k"), type_v=_cache_type(runtime, "v"),
    ).total_bytes / 2**20  # fmt: skip
    return MemoryModelCheck(
        predicted_mb=predicted,
        measured_mb=measured_mb,
        error=(predicted - measured_mb) / measured_mb,
        context=context,
        sequences=sequences,
    )
