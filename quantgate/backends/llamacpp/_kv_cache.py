"""The KV-cache type of an embedded variant, as llama.cpp's context parameters.

llama.cpp stores the attention cache's keys and values in f16 unless told otherwise
(`type_k`, `type_v`); a quantized V cache works only with flash attention (without it,
`llama_init_from_model` fails: "quantized V cache requires flash_attn to be enabled").
"""

from __future__ import annotations

from dataclasses import dataclass

from quantgate.inputs._variants import KVCache


@dataclass(frozen=True)
class KVCacheParams:
    """What `llama_cpp.Llama` is given for a variant's cache, and what it records."""

    type_k: int
    type_v: int
    flash_attn: bool
    cache: KVCache

    def record(self) -> dict[str, str]:
        """The cache types as the run's `runtime` records them."""
        return {"k": self.cache.k, "v": self.cache.v}


def kv_cache_params(
    cache: KVCache | None, *, flash_attn: bool | None, default_flash_attn: bool
) -> KVCacheParams:
    """llama.cpp's `type_k`, `type_v` and flash attention for `cache` (f16 for both when None).

    Args:
        cache: The variant's cache type.
        flash_attn: Flash attention as the variant sets it (None: not set).
        default_flash_attn: What the engine uses when it is not set and the V cache is f16;
            a quantized V cache turns it on.

    Raises:
        ValueError: `flash_attn` is False with a quantized V cache.
    """
    import llama_cpp

    cache = cache or KVCache(k="f16", v="f16")
    quantized_v = cache.v != "f16"
    if flash_attn is False and quantized_v:
        raise ValueError(
            f"kv_cache {cache.label()}: a quantized V cache needs flash attention, not flash_attn = false"
        )
    types = {"f16": llama_cpp.GGML_TYPE_F16, "q8_0": llama_cpp.GGML_TYPE_Q8_0}
    types["q4_0"] = llama_cpp.GGML_TYPE_Q4_0
    on = flash_attn if flash_attn is not None else default_flash_attn or quantized_v
    return KVCacheParams(type_k=types[cache.k], type_v=types[cache.v], flash_attn=on, cache=cache)
