"""The Ollama backend's options, typed (`OllamaOptions`): a variant's `options` table as it reads them."""

from __future__ import annotations

from pydantic import Field

from quantgate.backends._backend_options import DEFAULT_TOP_LOGPROBS, ServedModelOptions
from quantgate.backends._streaming import DEFAULT_FIRST_TOKEN_TIMEOUT_S, DEFAULT_TIMEOUT_S
from quantgate.backends.ollama._ollama_chat import DEFAULT_NOTICE_EVERY_S, DEFAULT_NUM_KEEP

__all__ = ["DEFAULT_NUM_CTX", "OllamaOptions"]

DEFAULT_NUM_CTX = 8192
"""The context Ollama is asked for when the variant does not say (its own default is smaller)."""


class OllamaOptions(ServedModelOptions):
    """An Ollama variant's options; a key it does not name is refused (none goes to the server as it is)."""

    host: str | None = None
    """The server (`http://127.0.0.1:11434` when neither this nor `OLLAMA_HOST` says)."""
    num_ctx: int = Field(DEFAULT_NUM_CTX, ge=1)
    """The context window Ollama loads the model with."""
    max_tokens: int = Field(512, ge=1)
    """Tokens generated at most per call (Ollama's `num_predict`)."""
    seed: int = 0
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0)
    """The whole answer's time limit."""
    first_token_timeout_s: float = Field(DEFAULT_FIRST_TOKEN_TIMEOUT_S, gt=0)
    """The first token's time limit (a cold load included)."""
    keep_alive: str | int = "10m"
    """How long the server keeps the model loaded after a call (Ollama's duration, or seconds)."""
    num_keep: int = Field(DEFAULT_NUM_KEEP, ge=0)
    """Tokens of the prompt's start kept when Ollama shifts the context."""
    notice_every_s: float = Field(DEFAULT_NOTICE_EVERY_S, gt=0)
    """How often a word is printed while a call waits."""
    top_logprobs: int = Field(DEFAULT_TOP_LOGPROBS, ge=1, le=20)
    """Log-probabilities per position when token fidelity forces the model."""
