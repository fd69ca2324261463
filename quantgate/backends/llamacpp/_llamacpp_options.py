"""The embedded backend's options, typed (`LlamaCppOptions`): a variant's `options` table as it reads
them. The engine's parameters default to `EmbeddedEngine`'s own (None here: not given); the engine
checks how they combine (a grammar engine, fast_forward with llguidance)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from quantgate.backends._backend_options import BackendOptions

__all__ = ["LlamaCppOptions"]


class LlamaCppOptions(BackendOptions):
    """An embedded variant's options; the keys other than `max_tokens` and the embedding ones are given
    to the engine as they are (a key it does not take fails the variant, naming it)."""

    max_tokens: int = Field(512, ge=1)
    """Tokens generated at most per call."""
    n_ctx: int | None = Field(None, ge=1)
    """The context window the model is loaded with."""
    n_threads: int | None = Field(None, ge=1)
    """CPU threads (the physical cores by default)."""
    slots: int | None = Field(None, ge=1)
    """Sequences decoded at once (the run's concurrency by default)."""
    flash_attn: bool | None = None
    """Flash attention (needed for a quantized V cache)."""
    grammar_engine: str | None = None
    """`gbnf` (the default) or `llguidance`."""
    fast_forward: bool | None = None
    """Tokens the schema forces are decoded in one batch (llguidance only)."""
    seed: int | None = None
    max_array_items: int | None = Field(None, ge=1)
    """Items a JSON array may hold under the grammar."""
    score_labels: bool | None = None
    """A classification's label probabilities over its closed set."""
    pooling: Literal["mean", "cls", "last"] = "mean"
    """How token embeddings become one (the variant opened for embeddings)."""
    embedding_n_ctx: int = Field(2048, ge=1)
    """The context window of the embedding model."""
