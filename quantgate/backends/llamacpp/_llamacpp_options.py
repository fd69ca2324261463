"""The embedded backend's options, typed (`LlamaCppOptions`): a variant's `options` table as it reads
them. The engine's parameters default to `EmbeddedEngine`'s own (None here: not given); the engine
checks how they combine (a grammar engine, fast_forward with llguidance)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from quantgate.backends._backend_options import BackendOptions

__all__ = ["LlamaCppOptions"]

_NOT_THE_ENGINES = frozenset({"max_tokens", "pooling", "embedding_n_ctx", "max_retries", "retry_backoff_s"})
"""Options read by the chat model, the embedding mode or the retries, not `EmbeddedEngine`'s keywords."""
_GENERATION = frozenset({"max_tokens", "grammar_engine", "fast_forward", "chat_template"})
"""Options that only concern generation, left out when the model is opened for teacher forcing (the
variants read the tokens of the reference's prompt)."""


class LlamaCppOptions(BackendOptions):
    """An embedded variant's options; those of the engine (`engine_options`) are given to it as they
    are, and a key this model does not name is refused, naming the variant and the key."""

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
    chat_template: bool | None = None
    """The GGUF's own chat template renders the prompt (`tokenizer.chat_template`), not the
    base-model text; a GGUF without one is refused before the run."""
    score_labels: bool | None = None
    """A classification's label probabilities over its closed set."""
    pooling: Literal["mean", "cls", "last"] = "mean"
    """How token embeddings become one (the variant opened for embeddings)."""
    embedding_n_ctx: int = Field(2048, ge=1)
    """The context window of the embedding model."""

    def engine_options(self, *, generation: bool = True) -> dict[str, Any]:
        """`EmbeddedEngine`'s keywords as the variant gives them (those not given keep the engine's
        defaults); without `generation`, the grammar's are left out too (teacher forcing reads given
        tokens)."""
        left_out = _NOT_THE_ENGINES if generation else _NOT_THE_ENGINES | _GENERATION
        return self.model_dump(exclude_unset=True, exclude=set(left_out))

    def cpu_threads(self) -> int | None:
        """`n_threads`, when given."""
        return self.n_threads

    def prompt_format(self) -> str | None:
        """`the GGUF's chat template` with `chat_template`; None for the base-model prompt."""
        return "the GGUF's chat template" if self.chat_template else None

    def model_file_problem(self, path: Path) -> str | None:
        """With `chat_template`, a GGUF without a chat template (`missing_chat_template`)."""
        if not self.chat_template:
            return None
        from quantgate.backends.llamacpp._chat_template import missing_chat_template

        return missing_chat_template(path)

    def quantized_v_cache_refused(self) -> str | None:
        """llama.cpp quantizes the V cache only with flash attention: `flash_attn = false` rules it out."""
        if self.flash_attn is False:
            return (
                "llama.cpp needs flash attention for a quantized V cache; remove options.flash_attn = false"
            )
        return None
