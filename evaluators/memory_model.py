"""The memory model of an embedded variant: what a llama.cpp process holding it takes, predicted.

RSS ≈ process baseline + weights + vocabulary + KV cache + output buffers + compute buffers:

- weights: the GGUF file's size (the embedded backend reads it into memory, `use_mmap=False`);
- vocabulary: llama.cpp's token tables, `VOCAB_BYTES_PER_TOKEN` per entry (an estimate);
- KV cache: per cell, `n_head_kv * (key_length * bytes(type_k) + value_length * bytes(type_v))`
  summed over the layers. Cells: the context of each parallel sequence times the sequences (one
  unified buffer, as `quantgate.backends.llamacpp._batch` builds it); a sliding-window layer holds all of them
  with a full-size SWA cache (`swa_full`, the backend's setting), else
  `min(n_ctx, pad256(sliding_window * n_seq_max + n_ubatch))` (llama.cpp's `llama_kv_cache_iswa`);
- output buffers: `n_vocab` float32 logits per sequence of each context;
- compute buffers: the activations of one micro-batch (`compute_bytes`, an estimate: llama.cpp
  reserves room for the logits of a whole micro-batch, 512 MiB for Gemma 3's 262k vocabulary, but
  a decode that asks for a few rows of logits never touches most of it).

The embedded backend holds two contexts: its `Llama`'s own, which with slots only tokenizes
(`TOKENIZER_CONTEXT_CELLS` cells, one sequence), and the multi-sequence one the slots decode in
(`n_seq_max` = sequences + 1: the last keeps the shared prompt prefix). Pure arithmetic on values
handed in: `quantgate.capacity._gguf_metadata` reads a GGUF's metadata. Bytes throughout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from evaluators.errors import UsageError

KV_TYPE_BYTES: dict[str, float] = {
    "f32": 4.0,
    "f16": 2.0,
    "bf16": 2.0,
    "q8_0": 34 / 32,
    "q5_1": 24 / 32,
    "q5_0": 22 / 32,
    "q4_1": 20 / 32,
    "q4_0": 18 / 32,
    "iq4_nl": 18 / 32,
}
"""Bytes per element of each KV-cache type llama.cpp accepts (a block's bytes over its 32 elements)."""

SWA_PATTERNS: dict[str, int] = {"gemma3": 6, "gemma2": 2, "cohere2": 4}
"""Architectures whose sliding-window layers llama.cpp sets by a pattern (it is not in the GGUF):
every n-th layer attends globally, the others over the window. An architecture not listed with an
`attention.sliding_window` is counted as all global layers: more memory, never less."""

VOCAB_BYTES_PER_TOKEN = 160
"""llama.cpp's tables per vocabulary entry (its text, score and attributes, the text-to-id map);
an estimate, checked in benchmarks/memory_model.py."""

TOKENIZER_CONTEXT_CELLS = 512
"""The cells of the `Llama`'s own context when the embedded backend decodes in slots."""

MAX_SEQUENCES = 255
"""The most parallel sequences one context of the embedded backend holds: llama.cpp's limit of
256 sequences per context (`llama_max_parallel_sequences`), one of which keeps the shared prefix."""

SWA_PAD = 256
"""llama.cpp pads a sliding-window cache to a multiple of this."""

PROCESS_BASELINE_MIB = 215.0
"""RSS of a Python process with llama-cpp-python and `quantgate.backends` imported, before any model
loads: 213 MiB measured by benchmarks/memory_model.py (docs/performance.md)."""


class MemoryModelError(UsageError):
    """Metadata the memory model cannot use, or an unknown cache type; the message says which."""


@dataclass(frozen=True, kw_only=True)
class ModelShape:
    """What the memory model needs of a model, from its GGUF metadata.

    Attributes:
        architecture: `general.architecture` (`gemma3`).
        n_layer: Transformer blocks.
        n_head: Attention heads.
        n_head_kv: KV heads of each layer.
        key_length: Elements of one head's key.
        value_length: Elements of one head's value.
        n_embd: Embedding width.
        n_ff: Feed-forward width.
        n_vocab: Vocabulary entries.
        context_length: The context the model was trained for.
        sliding_window: The attention window of sliding-window layers, None without any.
    """

    architecture: str
    n_layer: int
    n_head: int
    n_head_kv: tuple[int, ...]
    key_length: int
    value_length: int
    n_embd: int
    n_ff: int
    n_vocab: int
    context_length: int
    sliding_window: int | None = None

    def swa_layers(self) -> tuple[bool, ...]:
        """For each layer, whether it attends over the sliding window (llama.cpp's pattern)."""
        pattern = SWA_PATTERNS.get(self.architecture)
        if self.sliding_window is None or pattern is None:
            return (False,) * self.n_layer
        return tuple(layer % pattern < pattern - 1 for layer in range(self.n_layer))

    def kv_bytes_per_cell(self, *, type_k: str = "f16", type_v: str = "f16") -> tuple[float, float]:
        """KV bytes of one cell (one token of one sequence): (global layers, sliding-window layers)."""
        k_bytes, v_bytes = kv_type_bytes(type_k), kv_type_bytes(type_v)
        full = swa = 0.0
        for heads, is_swa in zip(self.n_head_kv, self.swa_layers(), strict=True):
            layer = heads * (self.key_length * k_bytes + self.value_length * v_bytes)
            if is_swa:
                swa += layer
            else:
                full += layer
        return full, swa


def kv_type_bytes(name: str) -> float:
    """Bytes per element of a KV-cache type (`f16`, `q8_0`, `q4_0`, ...).

    Raises:
        MemoryModelError: A type llama.cpp's KV cache does not take.
    """
    try:
        return KV_TYPE_BYTES[name.lower()]
    except KeyError:
        known = ", ".join(KV_TYPE_BYTES)
        raise MemoryModelError(f"unknown KV-cache type {name!r}; one of {known}") from None


def _number(metadata: Mapping[str, object], key: str, *, default: int | None = None) -> int:
    value = metadata.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        found = "missing" if key not in metadata else f"{value!r}"
        raise MemoryModelError(f"metadata {key} is {found}, not a positive integer")
    return value


def _vocabulary_size(metadata: Mapping[str, object]) -> int:
    tokens = metadata.get("tokenizer.ggml.tokens")
    if isinstance(tokens, list | tuple):  # the vocabulary itself, or (read from a file) its size
        return _number({"tokenizer.ggml.tokens": len(tokens)}, "tokenizer.ggml.tokens")
    return _number(metadata, "tokenizer.ggml.tokens")


def model_shape(metadata: Mapping[str, object]) -> ModelShape:
    """The shape of a model from its GGUF metadata (keys `<arch>.block_count`, ...; `tokenizer.ggml.tokens`
    as the vocabulary's size).

    Raises:
        MemoryModelError: A key the model needs is missing or not a positive integer; it is named.
    """
    arch = metadata.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise MemoryModelError("metadata general.architecture is missing")
    n_layer = _number(metadata, f"{arch}.block_count")
    n_head = _number(metadata, f"{arch}.attention.head_count")
    n_embd = _number(metadata, f"{arch}.embedding_length")
    heads_kv = metadata.get(f"{arch}.attention.head_count_kv", n_head)
    listed = list(heads_kv) if isinstance(heads_kv, list | tuple) else [heads_kv] * n_layer
    per_layer = tuple(h for h in listed if isinstance(h, int) and not isinstance(h, bool) and h >= 0)
    if len(per_layer) != n_layer or len(listed) != n_layer:
        raise MemoryModelError(f"metadata {arch}.attention.head_count_kv is {heads_kv!r}")
    window = metadata.get(f"{arch}.attention.sliding_window")
    head_dim = n_embd // n_head
    return ModelShape(
        architecture=arch,
        n_layer=n_layer,
        n_head=n_head,
        n_head_kv=per_layer,
        key_length=_number(metadata, f"{arch}.attention.key_length", default=head_dim),
        value_length=_number(metadata, f"{arch}.attention.value_length", default=head_dim),
        n_embd=n_embd,
        n_ff=_number(metadata, f"{arch}.feed_forward_length"),
        n_vocab=_vocabulary_size(metadata),
        context_length=_number(metadata, f"{arch}.context_length"),
        sliding_window=window if isinstance(window, int) and window > 0 else None,
    )


@dataclass(frozen=True, kw_only=True)
class MemoryPrediction:
    """A process's predicted RSS and its parts, in bytes.

    Attributes:
        baseline_bytes: The process before any model loads (Python, llama.cpp, the harness).
        weights_bytes: The model file.
        vocabulary_bytes: llama.cpp's vocabulary tables.
        kv_bytes: The KV caches of both contexts.
        output_bytes: The logits buffers of both contexts.
        compute_bytes: The activations of one micro-batch.
        kv_cells: Cells of the decoding context (context x sequences).
        kv_bytes_per_token: KV bytes of one token in every layer, at the cache types asked for.
    """

    baseline_bytes: int
    weights_bytes: int
    vocabulary_bytes: int
    kv_bytes: int
    output_bytes: int
    compute_bytes: int
    kv_cells: int
    kv_bytes_per_token: float

    @property
    def total_bytes(self) -> int:
        """The predicted RSS."""
        return (
            self.baseline_bytes + self.weights_bytes + self.vocabulary_bytes + self.kv_bytes
            + self.output_bytes + self.compute_bytes
        )  # fmt: skip


def kv_cache_bytes(
    shape: ModelShape,
    *,
    n_ctx: int,
    n_seq_max: int,
    type_k: str = "f16",
    type_v: str = "f16",
    swa_full: bool = True,
    n_ubatch: int = 512,
) -> int:
    """The KV cache of one llama.cpp context of `n_ctx` cells shared by `n_seq_max` sequences."""
    full, swa = shape.kv_bytes_per_cell(type_k=type_k, type_v=type_v)
    swa_cells = n_ctx
    if not swa_full and shape.sliding_window is not None:
        wanted = shape.sliding_window * n_seq_max + n_ubatch
        swa_cells = min(n_ctx, -(-wanted // SWA_PAD) * SWA_PAD)
    return round(full * n_ctx + swa * swa_cells)


def compute_bytes(shape: ModelShape, *, n_ubatch: int = 512, sequences: int = 1) -> int:
    """The compute buffer a decode touches, estimated: float32 activations of one micro-batch (the
    residual stream and norms, about 8 x n_embd; query, key, value and attention output, 4 heads'
    widths; the feed-forward's gate, up and product, 3 x n_ff) and the logits of one row per sequence."""
    head_width = shape.n_head * max(shape.key_length, shape.value_length)
    per_token = 8 * shape.n_embd + 4 * head_width + 3 * shape.n_ff
    return 4 * (n_ubatch * per_token + sequences * shape.n_vocab)


def predict_memory(
    shape: ModelShape,
    *,
    weights_bytes: int,
    baseline_bytes: int,
    context: int,
    sequences: int,
    type_k: str = "f16",
    type_v: str = "f16",
    swa_full: bool = True,
    n_ubatch: int = 512,
) -> MemoryPrediction:
    """The RSS of the embedded backend holding `shape` with `sequences` parallel sequences of
    `context` tokens each (one unified KV buffer of context x sequences cells, as the slots run).

    Raises:
        MemoryModelError: An unknown cache type, or a context or sequence count below 1.
    """
    if context < 1 or sequences < 1:
        raise MemoryModelError(f"context ({context}) and sequences ({sequences}) must be at least 1")
    n_ctx = context * sequences
    kv = kv_cache_bytes(
        shape, n_ctx=n_ctx, n_seq_max=sequences + 1, type_k=type_k, type_v=type_v, swa_full=swa_full,
        n_ubatch=n_ubatch,
    ) + kv_cache_bytes(
        shape, n_ctx=TOKENIZER_CONTEXT_CELLS, n_seq_max=1, type_k=type_k, type_v=type_v, n_ubatch=n_ubatch
    )  # fmt: skip
    full, swa = shape.kv_bytes_per_cell(type_k=type_k, type_v=type_v)
    return MemoryPrediction(
        baseline_bytes=baseline_bytes,
        weights_bytes=weights_bytes,
        vocabulary_bytes=VOCAB_BYTES_PER_TOKEN * shape.n_vocab,
        kv_bytes=kv,
        output_bytes=4 * shape.n_vocab * (sequences + 2),  # n_seq_max = sequences + 1, and the tokenizer's 1
        compute_bytes=compute_bytes(shape, n_ubatch=n_ubatch, sequences=sequences),
        kv_cells=n_ctx,
        kv_bytes_per_token=full + swa,
    )


def max_sequences(
    shape: ModelShape,
    *,
    budget_bytes: int,
    weights_bytes: int,
    baseline_bytes: int,
    context: int,
    type_k: str = "f16",
    type_v: str = "f16",
    swa_full: bool = True,
    limit: int = MAX_SEQUENCES,
) -> int:
    """The most parallel sequences of `context` tokens whose predicted RSS fits in `budget_bytes`,
    up to `limit`; 0 when not even one does. The prediction grows with the sequences, so a
    bisection finds it."""

    def fits(sequences: int) -> bool:
        predicted = predict_memory(
            shape, weights_bytes=weights_bytes, baseline_bytes=baseline_bytes, context=context,
            sequences=sequences, type_k=type_k, type_v=type_v, swa_full=swa_full,
        )  # fmt: skip
        return predicted.total_bytes <= budget_bytes

    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low
