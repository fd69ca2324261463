"""`quantgate capacity`: how many parallel sequences each variant fits in a memory budget.

Per embedded variant, the memory model (`evaluators/memory_model.py`) on its GGUF's metadata and
file size: the most sequences of a given context whose predicted RSS fits the budget. A variant
without a model file (Ollama, a LangChain model) gets no figure, and a note saying why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluators.memory_model import (
    MAX_SEQUENCES,
    PROCESS_BASELINE_MIB,
    MemoryModelError,
    max_sequences,
    model_shape,
    predict_memory,
)
from quantgate.capacity._gguf_metadata import read_gguf_metadata
from quantgate.inputs._gguf_files import ModelFileError
from quantgate.inputs._variants import Variant

MIB = 2**20

DEFAULT_BASELINE_MIB = PROCESS_BASELINE_MIB
"""RSS of a Python process with llama-cpp-python and `quantgate.backends` imported, before any model
loads (`evaluators.memory_model.PROCESS_BASELINE_MIB`, measured). Override with `--baseline-mib`."""


@dataclass(frozen=True, kw_only=True)
class VariantCapacity:
    """One variant's capacity in the budget.

    Attributes:
        variant: The variant's name.
        sequences: The most parallel sequences that fit; None when not computed (see `note`).
        kv_cache: The KV-cache types the figure is for (`f16`, or `K q8_0, V f16`).
        kv_bytes_per_token: KV bytes of one token at those types.
        weights_bytes: The model file's size.
        one_sequence_bytes: Predicted RSS with one sequence.
        at_capacity_bytes: Predicted RSS at `sequences` (None when 0 or not computed).
        note: Why there is no figure, or why it is 0.
    """

    variant: str
    sequences: int | None
    kv_cache: str | None = None
    kv_bytes_per_token: float | None = None
    weights_bytes: int | None = None
    one_sequence_bytes: int | None = None
    at_capacity_bytes: int | None = None
    note: str | None = None


def variant_capacity(
    variant: Variant,
    *,
    budget_bytes: int,
    context: int,
    baseline_bytes: int,
    type_k: str = "f16",
    type_v: str = "f16",
) -> VariantCapacity:
    """The capacity of one embedded variant (its `model` a GGUF file).

    Raises:
        ModelFileError: The file is missing, not a GGUF, corrupt or truncated; or its metadata lacks
            what the memory model needs. The message names the variant and the file.
    """
    path = Path(variant.model)
    try:
        shape = model_shape(read_gguf_metadata(path))
    except ModelFileError as exc:
        raise ModelFileError(f"variant {variant.name}: {exc}") from None
    except MemoryModelError as exc:
        raise ModelFileError(f"variant {variant.name}: {path}: {exc}") from None
    weights = path.stat().st_size

    def predicted(sequences: int) -> int:
        return predict_memory(
            shape, weights_bytes=weights, baseline_bytes=baseline_bytes, context=context,
            sequences=sequences, type_k=type_k, type_v=type_v,
        ).total_bytes  # fmt: skip

    fits = max_sequences(
        shape, budget_bytes=budget_bytes, weights_bytes=weights, baseline_bytes=baseline_bytes,
        context=context, type_k=type_k, type_v=type_v,
    )  # fmt: skip
    one = predicted(1)
    note = None
    if fits == 0:
        note = f"one sequence needs {one / MIB:,.0f} MiB, more than the budget"
    elif fits == MAX_SEQUENCES:
        note = f"more may fit: {fits} is llama.cpp's limit per context (256 sequences, one the prefix)"
    elif context > shape.context_length:
        note = f"the model was trained for {shape.context_length:,} tokens of context"
    return VariantCapacity(
        variant=variant.name,
        sequences=fits,
        kv_cache=type_k if type_k == type_v else f"K {type_k}, V {type_v}",
        kv_bytes_per_token=sum(shape.kv_bytes_per_cell(type_k=type_k, type_v=type_v)),
        weights_bytes=weights,
        one_sequence_bytes=one,
        at_capacity_bytes=predicted(fits) if fits else None,
        note=note,
    )


def _cache_types(variant: Variant, type_k: str | None, type_v: str | None) -> tuple[str, str]:
    """The K and V types: the ones asked for, else the variant's `kv_cache`, else f16."""
    own = variant.kv_cache
    return type_k or (own.k if own else "f16"), type_v or (own.v if own else "f16")


def capacities(
    variants: Sequence[Variant],
    embedded: Sequence[bool],
    *,
    budget_bytes: int,
    context: int,
    baseline_bytes: int,
    type_k: str | None = None,
    type_v: str | None = None,
) -> list[VariantCapacity]:
    """Each variant's capacity; `embedded[i]` says whether variant i loads its GGUF in process.
    A cache type not given is the variant's own (`kv_cache`), else f16."""
    found = []
    for variant, in_process in zip(variants, embedded, strict=True):
        if not in_process:
            found.append(
                VariantCapacity(
                    variant=variant.name, sequences=None, note="not an embedded GGUF: not modelled"
                )
            )
            continue
        k, v = _cache_types(variant, type_k, type_v)
        found.append(
            variant_capacity(
                variant, budget_bytes=budget_bytes, context=context, baseline_bytes=baseline_bytes,
                type_k=k, type_v=v,
            )
        )  # fmt: skip
    return found
