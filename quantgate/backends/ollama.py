"""The Ollama backend: `ollama:TAG` variants through langchain-ollama's `ChatOllama`.

Opening a variant asks the server for its version (`/api/version`) and the model's details
(`/api/show`, `/api/tags`: quantization level, parameter size, family, format, digest,
Modelfile parameters), then loads the model with an empty `/api/generate` so the cold load
is timed on its own and never counted in a case's latency, then reads `/api/ps` (size in
memory, size in VRAM, context length). Chat calls go through `ChatOllama` with `format`
set to the dataset's JSON schema, temperature 0 and a fixed seed; transport failures become
`ModelCallError`s with a kind, which the extraction graph retries when a retry can help.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
import psutil
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk

from graphs.extraction import ModelCallError
from quantgate.backends import BackendError, OpenedVariant
from quantgate.backends.streaming import StreamingChatModel
from quantgate.inputs.variants import Variant

DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_NUM_CTX = 8192
DEFAULT_TIMEOUT_S = 300.0


def ollama_host(variant: Variant) -> str:
    """The server URL: the variant's `host` option, else `OLLAMA_HOST`, else localhost:11434."""
    raw = str(variant.options.get("host") or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST)
    if "://" not in raw:
        raw = f"http://{raw}"
    parts = urlsplit(raw)
    host = parts.hostname or "127.0.0.1"
    if host == "0.0.0.0":
        host = "127.0.0.1"
    default_port = 443 if parts.scheme == "https" else 11434  # as the ollama client does
    return f"{parts.scheme}://{host}:{parts.port or default_port}"


def classify(exc: BaseException) -> ModelCallError:
    """Name a transport failure and say whether a retry can help."""
    from ollama import ResponseError

    if isinstance(exc, ModelCallError):
        return exc
    if isinstance(exc, ResponseError):
        status = exc.status_code
        if status == 404:
            return ModelCallError("not_found", f"model not found: {exc.error}", retryable=False)
        if status in (429, 503):
            return ModelCallError("busy", f"server busy ({status}): {exc.error}", retryable=True)
        if status >= 500:
            return ModelCallError("server_error", f"server error {status}: {exc.error}", retryable=True)
        return ModelCallError("bad_request", f"request refused ({status}): {exc.error}", retryable=False)
    if isinstance(exc, httpx.TimeoutException):
        return ModelCallError("timeout", f"timed out: {exc}", retryable=True)
    if isinstance(exc, httpx.ConnectError | ConnectionError):
        return ModelCallError("connection", f"server not reachable: {exc}", retryable=True)
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | ValueError):
        return ModelCallError("stream_cut", f"the answer stream was cut: {exc}", retryable=True)
    return ModelCallError("backend_error", f"{type(exc).__name__}: {exc}", retryable=False)


class OllamaChatModel(StreamingChatModel):
    """`ChatOllama` whose transport failures are raised as `ModelCallError`s with a kind."""

    inner: BaseChatModel

    @property
    def _llm_type(self) -> str:
        return "quantgate-ollama"

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        try:
            for chunk in self.inner.stream(messages, stop=stop, **kwargs):
                yield ChatGenerationChunk(message=chunk)
        except Exception as exc:
            raise classify(exc) from exc


class OllamaServer:
    """The few server endpoints the backend reads, with errors that say what to do."""

    def __init__(self, host: str, timeout_s: float) -> None:
        self.host = host
        self.client = httpx.Client(base_url=host, timeout=timeout_s)

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise BackendError(
                f"Ollama server at {self.host} is not reachable ({exc}); is `ollama serve` running? "
                "Set OLLAMA_HOST or the variant's host option for another address."
            ) from exc
        if response.status_code == 404 and path in ("/api/show", "/api/generate"):
            model = kwargs.get("json", {}).get("model")
            raise BackendError(f"model {model!r} not found on {self.host}; run: ollama pull {model}")
        if response.status_code >= 400:
            raise BackendError(f"{self.host}{path} answered {response.status_code}: {response.text[:200]}")
        body: dict[str, Any] = response.json()
        return body

    def version(self) -> str:
        return str(self._call("GET", "/api/version").get("version"))

    def show(self, model: str) -> dict[str, Any]:
        return self._call("POST", "/api/show", json={"model": model})

    def digest(self, model: str) -> str | None:
        tags = self._call("GET", "/api/tags").get("models", [])
        return next((m.get("digest") for m in tags if model in (m.get("model"), m.get("name"))), None)

    def load(self, model: str, keep_alive: str) -> dict[str, Any]:
        return self._call("POST", "/api/generate", json={"model": model, "keep_alive": keep_alive})

    def running(self, model: str) -> dict[str, Any] | None:
        loaded = self._call("GET", "/api/ps").get("models", [])
        return next((m for m in loaded if model in (m.get("model"), m.get("name"))), None)

    def local_pid(self) -> int | None:
        """PID of the process listening on the server's port, when it runs on this machine."""
        parts = urlsplit(self.host)
        if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            return None
        try:
            for conn in psutil.net_connections(kind="tcp"):
                if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == parts.port:
                    return conn.pid
        except psutil.AccessDenied:
            return None
        return None


@contextmanager
def open_ollama(variant: Variant, schema: Mapping[str, Any]) -> Iterator[OpenedVariant]:
    """Open an `ollama:TAG` variant (see the module docstring)."""
    from langchain_ollama import ChatOllama

    options = dict(variant.options)
    host = ollama_host(variant)
    num_ctx = int(options.get("num_ctx", DEFAULT_NUM_CTX))
    max_tokens = int(options.get("max_tokens", 512))
    seed = int(options.get("seed", 0))
    timeout_s = float(options.get("timeout_s", DEFAULT_TIMEOUT_S))
    keep_alive = str(options.get("keep_alive", "10m"))
    server = OllamaServer(host, timeout_s)
    version = server.version()
    show = server.show(variant.model)
    started = time.perf_counter()
    loaded = server.load(variant.model, keep_alive)
    cold_load_s = time.perf_counter() - started
    running = server.running(variant.model) or {}
    chat = ChatOllama(
        model=variant.model,
        base_url=host,
        format=dict(schema),
        temperature=0.0,
        seed=seed,
        num_ctx=num_ctx,
        num_predict=max_tokens,
        keep_alive=keep_alive,
        client_kwargs={"timeout": timeout_s},
    )
    details = show.get("details", {})
    yield OpenedVariant(
        chat_model=OllamaChatModel(inner=chat),
        runtime={
            "name": "ollama",
            "version": version,
            "host": host,
            "num_ctx": num_ctx,
            "seed": seed,
            "temperature": 0.0,
            "model_digest": server.digest(variant.model),
            "details": details,
            "parameters": show.get("parameters"),
            "cold_load_s": cold_load_s,
            "cold_load_duration_s": (loaded.get("load_duration") or 0) / 1e9
            if "load_duration" in loaded
            else None,
            "ps": running,
            "num_parallel": os.environ.get("OLLAMA_NUM_PARALLEL"),
        },
        context_window=num_ctx,
        max_output_tokens=max_tokens,
        quantization=details.get("quantization_level"),
        memory_pid=server.local_pid(),
        reported_memory_bytes=running.get("size"),
        reported_vram_bytes=running.get("size_vram"),
        max_retries=int(options.get("max_retries", 2)),
        retry_backoff_s=float(options.get("retry_backoff_s", 0.5)),
    )
    server.client.close()
