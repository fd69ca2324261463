"""KV-cache variants of the ladder: a weight file served with a quantized attention cache.

`quantgate ladder --kv-cache q8_0,q4_0` adds, for each weight type built (or those named by
`--kv-cache-of`), a variant such as `Q4_K_M-kv-q8_0`: the same GGUF file, its `kv_cache` set
(K and V), so a run compares what the cache's quantization costs beside the weights'.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluators.errors import QuantgateError
from quantgate.inputs._variants import KV_CACHE_TYPES, KVCache, Variant, VariantSet


class KVCacheLadderError(QuantgateError, ValueError):
    """`--kv-cache` or `--kv-cache-of` names something the ladder cannot make."""


def kv_variant_name(weights: str, cache_type: str) -> str:
    """The name of a KV-cache variant: `Q4_K_M-kv-q8_0`."""
    return f"{weights}-kv-{cache_type}"


def check_kv_caches(cache_types: Sequence[str], of: Sequence[str] | None, built: Sequence[str]) -> None:
    """Refuse, before anything is built, cache types and weight types the ladder cannot pair.

    Args:
        cache_types: The `--kv-cache` types.
        of: The `--kv-cache-of` weight types, None for every quantization built.
        built: The names of the ladder's weight variants (the reference first).

    Raises:
        KVCacheLadderError: A type that is not a quantized cache type, or a weight type not built.
    """
    quantized = [t for t in KV_CACHE_TYPES if t != "f16"]
    wrong = [t for t in cache_types if t not in quantized]
    if wrong:
        raise KVCacheLadderError(
            f"--kv-cache {','.join(wrong)}: use {' or '.join(quantized)} (f16 is the cache every "
            "weight variant already uses)"
        )
    missing = [name for name in of or () if name not in built]
    if missing:
        raise KVCacheLadderError(
            f"--kv-cache-of {','.join(missing)}: not a weight type of this ladder ({', '.join(built)})"
        )


def with_kv_cache_variants(
    variant_set: VariantSet, cache_types: Sequence[str], of: Sequence[str] | None = None
) -> VariantSet:
    """`variant_set` with a variant per (weight type, cache type) after each weight variant.

    Args:
        variant_set: The ladder's weight variants (reference first).
        cache_types: Quantized cache types (`q8_0`, `q4_0`), each for K and V.
        of: The weight types to pair; None: every one but the reference.

    Raises:
        KVCacheLadderError: See `check_kv_caches`.
    """
    names = [v.name for v in variant_set.variants]
    check_kv_caches(cache_types, of, names)
    chosen = set(of) if of is not None else set(names) - {variant_set.reference}
    variants: list[Variant] = []
    for variant in variant_set.variants:
        variants.append(variant)
        if variant.name in chosen:
            variants.extend(
                variant.model_copy(
                    update={
                        "name": kv_variant_name(variant.name, t),
                        "kv_cache": KVCache.model_validate({"k": t, "v": t}),
                    }
                )
                for t in dict.fromkeys(cache_types)
            )
    return VariantSet(reference=variant_set.reference, variants=variants)
