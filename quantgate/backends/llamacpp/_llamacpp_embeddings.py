"""Embeddings from a GGUF loaded in this process: llama.cpp's embedding mode, as LangChain `Embeddings`.

A decoder model such as Gemma 3 has no pooling of its own in its GGUF, so the hidden
states of a text's tokens are pooled here, by mean by default (`pooling`, recorded with
the run). Each text is one llama.cpp batch; a text longer than `n_ctx` tokens is cut
there (counted in `truncated`), as llama-cpp-python's `embed(truncate=True)` does.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import Embeddings

from quantgate._hardware import physical_cores

Pooling = Literal["mean", "cls", "last"]
POOLINGS: tuple[Pooling, ...] = ("mean", "cls", "last")


class LlamaCppEmbeddings(Embeddings):
    """Pooled hidden states of llama.cpp, one vector per text (not normalized)."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        pooling: Pooling = "mean",
        n_ctx: int = 2048,
        n_threads: int | None = None,
    ) -> None:
        import llama_cpp
        from llama_cpp._utils import suppress_stdout_stderr

        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}")
        self.model_path = Path(model_path)
        self.pooling = pooling
        self.n_ctx = n_ctx
        self.n_threads = n_threads or physical_cores()
        self.truncated = 0
        """Texts cut at `n_ctx` tokens so far."""
        self.tokens = 0
        """Tokens embedded so far (after cutting)."""
        self._lock = threading.Lock()
        pooling_type = {
            "mean": llama_cpp.LLAMA_POOLING_TYPE_MEAN,
            "cls": llama_cpp.LLAMA_POOLING_TYPE_CLS,
            "last": llama_cpp.LLAMA_POOLING_TYPE_LAST,
        }[pooling]
        with suppress_stdout_stderr(disable=False):  # llama.cpp prints KV-cache notes even when not verbose
            self.llama = llama_cpp.Llama(
                model_path=str(self.model_path),
                embedding=True,
                pooling_type=pooling_type,
                n_ctx=n_ctx,
                n_batch=n_ctx,
                n_ubatch=n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                use_mmap=False,
                verbose=False,
            )
        self.dimensions = int(self.llama.n_embd())

    def _embed(self, text: str) -> list[float]:
        with self._lock:
            count = len(self.llama.tokenize(text.encode("utf-8")))
            self.truncated += count > self.n_ctx
            self.tokens += min(count, self.n_ctx)
            vector: Any = self.llama.embed(text, normalize=False, truncate=True)
        return [float(x) for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        return [self._embed(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """The text's vector (queries are embedded as documents are)."""
        return self._embed(text)

    def close(self) -> None:
        """Free the model."""
        self.llama.close()
