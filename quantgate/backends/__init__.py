"""Model backends: how a variant becomes a LangChain chat model for one schema.

A backend is the extension point for serving stacks. It opens a variant (loading weights,
or connecting to a server), hands out a chat model constrained to the dataset's JSON schema,
reports what it knows about the runtime, and frees everything when the block ends:

    with open_variant(variant, schema) as opened:
        graph.invoke({"text": ...}, context=ExtractionContext(model=opened.chat_model, ...))

Register another backend with `register_backend("name", factory)`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel

from quantgate.hardware import package_version
from quantgate.variants import Variant


class BackendError(RuntimeError):
    """A variant that cannot be opened (missing file, unknown backend, load failure)."""


@dataclass(kw_only=True)
class OpenedVariant:
    """A variant ready to extract with.

    Attributes:
        chat_model: The chat model, constrained to the schema where the backend can.
        runtime: Name and version of what serves it (recorded in `variants.json`).
        context_window: Tokens the model can attend to, when known.
        max_output_tokens: The generation limit per call.
        count_tokens: The model's tokenizer, when available (long-input handling uses it).
        quantization: The quantization the server reports, when the variant does not say.
        memory_pid: The process that holds the model when it is not this one (a local
            server); its RSS, children included, is what gets sampled.
        reported_memory_bytes: The model's size in memory as the server reports it.
        reported_vram_bytes: The part of it in GPU memory, as the server reports it.
        max_retries: Calls repeated after a retryable failure (a busy server, a timeout).
        retry_backoff_s: Wait before the first retry, doubled each time.
    """

    chat_model: BaseChatModel
    runtime: dict[str, Any] = field(default_factory=dict)
    context_window: int | None = None
    max_output_tokens: int = 512
    count_tokens: Callable[[str], int] | None = None
    quantization: str | None = None
    memory_pid: int | None = None
    reported_memory_bytes: int | None = None
    reported_vram_bytes: int | None = None
    max_retries: int = 2
    retry_backoff_s: float = 0.5


class Backend(Protocol):
    """Opens a variant for a schema; the returned context manager frees it on exit."""

    def __call__(self, variant: Variant, schema: Mapping[str, Any]) -> AbstractContextManager[OpenedVariant]:
        """Open `variant` with output constrained to `schema`."""
        ...


@contextmanager
def _open_llamacpp(variant: Variant, schema: Mapping[str, Any]) -> Iterator[OpenedVariant]:
    from pathlib import Path

    from quantgate.backends.llamacpp import EmbeddedEngine, LlamaCppChatModel

    path = Path(variant.model)
    if not path.is_file():
        raise BackendError(f"variant {variant.name}: no GGUF file at {path}")
    options = dict(variant.options)
    max_tokens = int(options.pop("max_tokens", 512))
    try:
        engine = EmbeddedEngine(path, **options)
    except (ValueError, RuntimeError, TypeError) as exc:
        raise BackendError(f"variant {variant.name}: llama.cpp could not load {path}: {exc}") from exc
    try:
        yield OpenedVariant(
            chat_model=LlamaCppChatModel(engine=engine, json_schema=dict(schema), max_tokens=max_tokens),
            runtime={
                "name": "llama.cpp (llama-cpp-python, in process)",
                "version": package_version("llama-cpp-python"),
                "n_ctx": engine.n_ctx,
                "n_threads": engine.llama.n_threads,
                "seed": engine.seed,
                "decoding": "greedy (temperature 0), JSON-schema grammar",
                "use_mmap": False,
                "max_array_items": engine.max_array_items,
            },
            context_window=engine.n_ctx,
            max_output_tokens=max_tokens,
            count_tokens=engine.count_tokens,
        )
    finally:
        engine.close()


@contextmanager
def _open_chat_model(variant: Variant, schema: Mapping[str, Any]) -> Iterator[OpenedVariant]:
    if variant.chat_model is None:
        raise BackendError(f"variant {variant.name}: backend 'langchain' needs a chat_model object")
    yield OpenedVariant(
        chat_model=variant.chat_model,
        runtime={"name": type(variant.chat_model).__name__, "version": package_version("langchain-core")},
    )


@contextmanager
def _open_ollama(variant: Variant, schema: Mapping[str, Any]) -> Iterator[OpenedVariant]:
    from quantgate.backends.ollama import open_ollama

    with open_ollama(variant, schema) as opened:
        yield opened


_BACKENDS: dict[str, Backend] = {
    "llamacpp": _open_llamacpp,
    "langchain": _open_chat_model,
    "ollama": _open_ollama,
}


def register_backend(name: str, backend: Backend) -> None:
    """Make `backend` available to variants whose `backend` field is `name`."""
    _BACKENDS[name] = backend


def open_variant(variant: Variant, schema: Mapping[str, Any]) -> AbstractContextManager[OpenedVariant]:
    """Open a variant with its backend.

    Raises:
        BackendError: The backend is unknown or not available in this version.
    """
    backend = _BACKENDS.get(variant.backend)
    if backend is None:
        known = ", ".join(sorted(_BACKENDS))
        raise BackendError(f"variant {variant.name}: unknown backend {variant.backend!r}; known: {known}")
    return backend(variant, schema)


__all__ = ["Backend", "BackendError", "OpenedVariant", "open_variant", "register_backend"]
