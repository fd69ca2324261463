"""Opening a variant for embeddings: a LangChain `Embeddings` object per backend.

- `llamacpp`: the GGUF in llama.cpp's embedding mode (`LlamaCppEmbeddings`), pooled by mean
  unless the variant's `pooling` option says `cls` or `last`;
- `ollama`: the server's `/api/embed` through langchain-ollama's `OllamaEmbeddings`
  (the server pools, and normalizes the vectors);
- `langchain`: an `Embeddings` object given from Python (`Variant.from_embeddings`).

Backends that can embed declare `embeddings=True` (`BackendCapabilities`); callers ask
`capabilities(variant).embeddings` before opening. A backend registered outside quantgate
teaches `open_embeddings` how to open it with `register_embeddings`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from quantgate.backends import BackendError
from quantgate.backends._backend_options import options_of
from quantgate.backends.llamacpp._llamacpp_options import LlamaCppOptions
from quantgate.inputs._variants import Variant


@dataclass(kw_only=True)
class OpenedEmbeddings:
    """A variant ready to embed with.

    Attributes:
        embeddings: The LangChain embeddings object.
        runtime: What serves it and how (recorded with the figures): pooling, context, server.
        truncated: Texts cut to the model's context so far, when the backend can tell.
    """

    embeddings: Embeddings
    runtime: dict[str, Any] = field(default_factory=dict)
    truncated: Callable[[], int | None] = lambda: None


EmbeddingsOpener = Callable[[Variant], AbstractContextManager[OpenedEmbeddings]]


@contextmanager
def _open_llamacpp(variant: Variant) -> Iterator[OpenedEmbeddings]:
    from quantgate.backends.llamacpp._llamacpp_embeddings import LlamaCppEmbeddings

    path = Path(variant.model)
    if not path.is_file():
        raise BackendError(f"variant {variant.name}: no GGUF file at {path}")
    options = options_of(variant, LlamaCppOptions)
    try:
        model = LlamaCppEmbeddings(
            path, pooling=options.pooling, n_ctx=options.embedding_n_ctx, n_threads=options.n_threads
        )
    except (ValueError, RuntimeError, TypeError) as exc:
        raise BackendError(
            f"variant {variant.name}: llama.cpp could not load {path} for embeddings: {exc}"
        ) from exc
    try:
        yield OpenedEmbeddings(
            embeddings=model,
            runtime={
                "name": "llama.cpp (llama-cpp-python, in process), embedding mode",
                "version": package_version("llama-cpp-python"),
                "pooling": model.pooling,
                "normalized": False,
                "n_ctx": model.n_ctx,
                "n_threads": model.n_threads,
                "dimensions": model.dimensions,
            },
            truncated=lambda: model.truncated,
        )
    finally:
        model.close()


@contextmanager
def _open_ollama(variant: Variant) -> Iterator[OpenedEmbeddings]:
    from langchain_ollama import OllamaEmbeddings

    from quantgate.backends.ollama._ollama import OllamaServer, ollama_host
    from quantgate.backends.ollama._ollama_options import OllamaOptions

    host = ollama_host(variant)
    options = options_of(variant, OllamaOptions)
    server = OllamaServer(host, options.timeout_s)
    version = server.version()
    server.show(variant.model)  # a missing model is named now, with the pull command
    model = OllamaEmbeddings(
        model=variant.model,
        base_url=host,
        num_ctx=options.num_ctx if "num_ctx" in options.model_fields_set else None,  # else the server's
        client_kwargs={"timeout": options.timeout_s},
    )
    yield OpenedEmbeddings(
        embeddings=model,
        runtime={
            "name": "ollama /api/embed",
            "version": version,
            "host": host,
            "pooling": "the server's",
            "normalized": True,
            "model_digest": server.digest(variant.model),
        },
    )


@contextmanager
def _open_object(variant: Variant) -> Iterator[OpenedEmbeddings]:
    if variant.embeddings is None:
        raise BackendError(f"variant {variant.name}: backend 'langchain' needs an embeddings object to embed")
    yield OpenedEmbeddings(
        embeddings=variant.embeddings,
        runtime={"name": type(variant.embeddings).__name__, "version": package_version("langchain-core")},
    )


_OPENERS: dict[str, EmbeddingsOpener] = {
    "llamacpp": _open_llamacpp,
    "ollama": _open_ollama,
    "langchain": _open_object,
}


def register_embeddings(backend: str, opener: EmbeddingsOpener) -> None:
    """Have `open_embeddings` open variants of `backend` (registered with `register_backend`,
    its capabilities declaring `embeddings`) with `opener`."""
    _OPENERS[backend] = opener


def open_embeddings(variant: Variant) -> AbstractContextManager[OpenedEmbeddings]:
    """Open a variant for embeddings with its backend.

    Raises:
        BackendError: The backend cannot embed, or the variant cannot be opened.
    """
    if variant.embeddings is not None:
        return _open_object(variant)
    opener = _OPENERS.get(variant.backend)
    if opener is None:
        raise BackendError(f"variant {variant.name}: backend {variant.backend!r} cannot produce embeddings")
    return opener(variant)
