"""The embedded backend: llama.cpp in this process, and the engine under it (slots, batches, grammars,
greedy decoding, teacher forcing, label scores, log-probabilities, embeddings).

`BACKEND` is its record (its capabilities, `CAPABILITIES`, and its options' model, `LlamaCppOptions`),
named in the `quantgate.backends` entry-point group (pyproject.toml) like any plugin's.
Importing this package loads nothing of llama.cpp; the opener loads the bindings when used.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from quantgate.backends import OpenedVariant, RegisteredBackend
from quantgate.backends._declared_capabilities import EMBEDDED_SLOTS, BackendCapabilities
from quantgate.backends.llamacpp._llamacpp_options import LlamaCppOptions
from quantgate.inputs._variants import Variant

CAPABILITIES = BackendCapabilities(
    token_fidelity="logits", process_isolation=True, parallel="slots", memory="process", model_file=True,
    default_concurrency=EMBEDDED_SLOTS, embeddings=True, kv_cache="applied", json_schema=True,
    verification=True,
)  # fmt: skip
"""llama.cpp in a worker process: full logits, several sequences in one context, the GGUF file loaded."""


@contextmanager
def open_embedded(
    variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
) -> Iterator[OpenedVariant]:
    """Open an embedded variant (see `quantgate.backends.llamacpp._llamacpp.open_llamacpp`)."""
    from quantgate.backends.llamacpp._llamacpp import open_llamacpp  # loads llama.cpp's bindings

    with open_llamacpp(variant, schema, slots=slots) as opened:
        yield opened


BACKEND = RegisteredBackend(
    name="llamacpp", open=open_embedded, capabilities=CAPABILITIES, options=LlamaCppOptions
)

__all__ = ["BACKEND", "CAPABILITIES", "open_embedded"]
