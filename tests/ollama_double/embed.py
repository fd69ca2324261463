"""The Ollama TEST DOUBLE's `/api/embed` (it is not Ollama): llama.cpp's embedding mode, mean-pooled.

docs.ollama.com/api/embed: `input` is a string or a list of strings, `truncate` (default true)
cuts each input to the context, else an input too long is an error; the answer's `embeddings`
are L2-normalized (one list per input), with `total_duration`, `load_duration` and
`prompt_eval_count`; `dimensions` keeps the first n values (renormalized).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tests.ollama_double.models import Models


def embed(models: Models, tag: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON answer of an `/api/embed` request for the served model `tag`."""
    raw = body.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        return 400, {"error": "invalid input type"}
    started = time.perf_counter()
    num_ctx = models.num_ctx(tag, body.get("options") or {})
    with models.embedding(tag, num_ctx) as (embedder, load_ns):
        before = embedder.tokens
        counts = [len(embedder.llama.tokenize(t.encode("utf-8"))) for t in texts]
        if body.get("truncate", True) is False and any(n > num_ctx for n in counts):
            return 400, {"error": "the input length exceeds the context length"}
        vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float64)
        tokens = embedder.tokens - before
    dimensions = body.get("dimensions")
    if isinstance(dimensions, int) and 0 < dimensions < vectors.shape[1]:
        vectors = vectors[:, :dimensions]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    elapsed_ns = int((time.perf_counter() - started) * 1e9)
    return 200, {"model": tag, "embeddings": vectors.tolist(), "load_duration": load_ns,
                 "total_duration": elapsed_ns, "prompt_eval_count": tokens}  # fmt: skip
