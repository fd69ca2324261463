"""The Ollama backend: a variant served by an Ollama server, its calls, tools and metadata fields.

`BACKEND` is its record (its capabilities, `CAPABILITIES`, and its options' model, `OllamaOptions`),
named in the `quantgate.backends` entry-point group (pyproject.toml) like any plugin's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from quantgate.backends import OpenedVariant, RegisteredBackend
from quantgate.backends._declared_capabilities import BackendCapabilities
from quantgate.backends.ollama._ollama_forcing import LOGPROBS_FORCING
from quantgate.backends.ollama._ollama_options import OllamaOptions
from quantgate.inputs._variants import Variant

CAPABILITIES = BackendCapabilities(
    token_fidelity="logprobs", logprobs_forcing=LOGPROBS_FORCING, process_isolation=True, parallel="server",
    memory="server", embeddings=True, kv_cache="declared", json_schema=True,
    no_verification=(
        "Ollama's API returns no log-probabilities of given text (no echo, no prompt log-probabilities), "
        "so an ollama variant cannot verify the reference's answers"
    ),
)  # fmt: skip
"""An Ollama server: it schedules concurrent requests (`OLLAMA_NUM_PARALLEL`), sets the KV cache type
server-wide, takes a JSON schema as `format` and returns top-k log-probabilities."""


@contextmanager
def open_served(
    variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
) -> Iterator[OpenedVariant]:
    """Open an Ollama variant (see `quantgate.backends.ollama._ollama.open_ollama`)."""
    from quantgate.backends.ollama._ollama import open_ollama

    with open_ollama(variant, schema) as opened:
        yield opened


BACKEND = RegisteredBackend(name="ollama", open=open_served, capabilities=CAPABILITIES, options=OllamaOptions)

__all__ = ["BACKEND", "CAPABILITIES", "open_served"]
