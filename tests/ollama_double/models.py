"""The models the Ollama TEST DOUBLE serves: names, loading, `keep_alive`, the context window.

Each behaviour follows Ollama's documentation, named where it is implemented.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quantgate.backends.llamacpp._engine import EmbeddedEngine
from quantgate.backends.llamacpp._llamacpp_embeddings import LlamaCppEmbeddings

DEFAULT_CONTEXT_LENGTH = 4096
"""docs.ollama.com/faq, "How can I specify the context window size?": "By default, Ollama uses a
context window size of 4096 tokens" (docs.ollama.com/context-length: 4k below 24 GiB of VRAM,
which a CPU-only server has); OLLAMA_CONTEXT_LENGTH or a request's `options.num_ctx` change it."""
DEFAULT_KEEP_ALIVE_S = 300.0
"""docs.ollama.com/faq, "How do I keep a model loaded in memory or make it unload immediately?":
"By default models are kept in memory for 5 minutes before being unloaded"."""
DEFAULT_NUM_KEEP = 4
"""Ollama's default `num_keep`: the prompt tokens kept at the start when a prompt is cut
(its runner logs `truncating input prompt limit=... keep=4 new=...`)."""
OUTPUT_ROOM = 1024
"""KV cells the double's engine holds beyond `num_ctx`, so a prompt cut to the full context
still has room to answer (Ollama's runner shifts its context instead)."""
FILE_TYPES = {0: "F32", 1: "F16", 7: "Q8_0", 10: "Q2_K", 12: "Q3_K_M", 15: "Q4_K_M", 17: "Q5_K_M", 18: "Q6_K"}

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def model_name(name: str) -> str:
    """A model name with its tag: docs.ollama.com/api (model names): "The tag is optional and, if
    not provided, will default to `latest`" (`gemma3` is `gemma3:latest`)."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def keep_alive_s(value: Any) -> float | None:
    """A request's `keep_alive` in seconds; None keeps the model loaded for good.

    docs.ollama.com/faq: it "can be set to: a duration string (such as "10m" or "24h"); a number
    in seconds (such as 3600); any negative number which will keep the model loaded in memory
    (e.g. -1 or "-1m"); '0' which will unload the model immediately after generating a response".

    Raises:
        ValueError: Not a duration (Ollama answers 400).
    """
    if value is None:
        return DEFAULT_KEEP_ALIVE_S
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = str(value).strip()
        sign, body = (-1.0, text[1:]) if text.startswith("-") else (1.0, text)
        try:
            seconds = sign * float(body)
        except ValueError:
            parts = _DURATION.findall(body)
            if not parts or "".join(n + u for n, u in parts) != body:
                raise ValueError(f"invalid duration {value!r}") from None
            seconds = sign * sum(float(n) * _UNIT_S[u] for n, u in parts)
    return None if seconds < 0 else seconds


@dataclass
class Loaded:
    """A loaded model: its engine, the context it was loaded with, when it is to be unloaded."""

    engine: EmbeddedEngine
    num_ctx: int
    expires_at: float | None  # time.time(); None: kept loaded for good
    active: int = 0


def read_metadata(path: Path) -> dict[str, str]:
    """GGUF metadata without loading the weights (llama.cpp, vocabulary only)."""
    from llama_cpp import Llama
    from llama_cpp._utils import suppress_stdout_stderr

    with suppress_stdout_stderr(disable=False):
        llama = Llama(model_path=str(path), vocab_only=True, verbose=False)
    metadata = dict(llama.metadata)
    llama.close()
    return metadata


class Models:
    """The served models by full name (with its tag); one is loaded at a time."""

    def __init__(
        self,
        paths: dict[str, Path],
        *,
        context_length: int = DEFAULT_CONTEXT_LENGTH,
        max_context: int | None = None,
    ) -> None:
        """Serve `paths` (name: GGUF); `context_length` as OLLAMA_CONTEXT_LENGTH; `max_context` as
        models trained for that many tokens (None: each file's own)."""
        self.paths = {model_name(tag): path for tag, path in paths.items()}
        self.context_length = context_length
        self.max_context = max_context
        self.digests = {
            tag: hashlib.sha256(path.read_bytes()).hexdigest() for tag, path in self.paths.items()
        }
        self.metadata = {tag: read_metadata(path) for tag, path in self.paths.items()}
        self.loaded: dict[str, Loaded] = {}
        self.lock = threading.Lock()
        self._embedder: tuple[str, int, LlamaCppEmbeddings] | None = None
        self._embed_lock = threading.Lock()

    def find(self, name: str) -> str | None:
        """The served model a request names (None: not served)."""
        tag = model_name(name) if name else ""
        return tag if tag in self.paths else None

    def details(self, tag: str) -> dict[str, Any]:
        metadata = self.metadata[tag]
        return {
            "parent_model": "",
            "format": "gguf",
            "family": metadata.get("general.architecture", ""),
            "families": [metadata.get("general.architecture", "")],
            "parameter_size": metadata.get("general.size_label", ""),
            "quantization_level": FILE_TYPES.get(int(metadata.get("general.file_type", -1)), "unknown"),
        }

    def num_ctx(self, tag: str, options: dict[str, Any]) -> int:
        """The context a request gets: its `num_ctx`, else the server's default, at most the model's
        own (Ollama logs "requested context size too large for model" and uses the model's)."""
        metadata = self.metadata[tag]
        trained = int(metadata.get(f"{metadata.get('general.architecture')}.context_length", 0) or 0)
        wanted = int(options.get("num_ctx") or self.context_length)
        return min([wanted, *(limit for limit in (trained, self.max_context) if limit)])

    def expire(self) -> None:
        """Unload the idle models whose `keep_alive` has run out."""
        with self.lock:
            now = time.time()
            for tag, loaded in list(self.loaded.items()):
                if loaded.active == 0 and loaded.expires_at is not None and loaded.expires_at <= now:
                    self._unload(tag)

    def _unload(self, tag: str) -> None:
        evicted = self.loaded.pop(tag)
        with evicted.engine.lock:  # a request still generating with it finishes first
            evicted.engine.close()

    def unload(self, tag: str) -> bool:
        """Unload `tag` now (`keep_alive` 0 with no prompt); whether it was loaded."""
        with self.lock:
            if tag not in self.loaded:
                return False
            self._unload(tag)
            return True

    def _load(self, tag: str, num_ctx: int) -> tuple[Loaded, int]:
        """The loaded model (loading or reloading it: another model, another context) and the
        nanoseconds the load took (0 when it was loaded already). Holds `self.lock`."""
        current = self.loaded.get(tag)
        if current is not None and current.num_ctx == num_ctx:
            return current, 0
        started = time.perf_counter()
        for other in list(self.loaded):  # one model at a time; a new context means a new runner
            self._unload(other)
        engine = EmbeddedEngine(self.paths[tag], n_ctx=num_ctx + OUTPUT_ROOM)
        self.loaded[tag] = Loaded(engine=engine, num_ctx=num_ctx, expires_at=None)
        return self.loaded[tag], int((time.perf_counter() - started) * 1e9)

    @contextmanager
    def serving(self, tag: str, num_ctx: int, keep_alive: float | None) -> Iterator[tuple[Loaded, int]]:
        """Hold `tag`'s engine for one request, loaded with `num_ctx`, and the load's nanoseconds.

        docs.ollama.com/api (keep_alive): it "controls how long the model will stay loaded into
        memory following the request": the clock starts when the request ends; 0 unloads it then.
        """
        self.expire()
        while True:
            with self.lock:
                loaded, load_ns = self._load(tag, num_ctx)
                loaded.active += 1
            try:
                with loaded.engine.lock:
                    if self.loaded.get(tag) is loaded:  # not unloaded between load and lock
                        yield loaded, load_ns
                        return
            finally:
                with self.lock:
                    loaded.active -= 1
                    if self.loaded.get(tag) is loaded:
                        loaded.expires_at = None if keep_alive is None else time.time() + keep_alive
                if keep_alive == 0:
                    self.expire()

    @contextmanager
    def embedding(self, tag: str, num_ctx: int) -> Iterator[tuple[LlamaCppEmbeddings, int]]:
        """`tag` in llama.cpp's embedding mode (mean pooling) with a context of `num_ctx`, held for one
        `/api/embed` request, and the nanoseconds its load took (0: loaded already). One embedding
        model is loaded at a time, apart from the chat models."""
        with self._embed_lock:
            load_ns = 0
            if self._embedder is None or self._embedder[:2] != (tag, num_ctx):
                if self._embedder is not None:
                    self._embedder[2].close()
                    self._embedder = None
                started = time.perf_counter()
                self._embedder = (tag, num_ctx, LlamaCppEmbeddings(self.paths[tag], n_ctx=num_ctx))
                load_ns = int((time.perf_counter() - started) * 1e9)
            yield self._embedder[2], load_ns
