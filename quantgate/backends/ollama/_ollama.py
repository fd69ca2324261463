"""The Ollama backend: `ollama:TAG` variants through langchain-ollama's `ChatOllama`.

Opening a variant asks the server for its version (`/api/version`) and the model's details
(`/api/show`, `/api/tags`: quantization level, parameter size, family, format, digest,
Modelfile parameters), then loads the model with an empty `/api/generate` carrying the
run's `num_ctx`, so the cold load is timed on its own and never counted in a case's latency,
then reads `/api/ps` (size in memory, size in VRAM, context length). Chat calls go through
`ChatOllama` with `format` set to the dataset's JSON schema, temperature 0, a fixed seed and
`num_ctx`; what can go wrong in a call is `quantgate.backends.ollama._ollama_chat`. The schema is sent
rewritten for llama.cpp's JSON-schema converter, which the server runs (`grammar_schema`), and
what that converter cannot enforce is recorded as `runtime.unenforced_schema_keywords`.
For a tool-calling task (one call or several, the tools the dataset's or its cases' own) the tools
are sent as Ollama's `tools` instead, with no `format`
(`quantgate.backends.ollama._ollama_tools`), and the variant says so (`native_tools`), so that the prompt
asks for a tool call rather than JSON; `runtime.decoding` says which way a variant's calls went.
Cases that bring their own tools get a chat model per tool set (`OpenedVariant.for_schema`), made
once; each holds its own HTTP client, and every one is closed when the variant is.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import psutil

from quantgate.backends import BackendError, OpenedVariant
from quantgate.backends._backend_options import options_of
from quantgate.backends._native_tools import native_tools_of
from quantgate.backends._schema_grammar import grammar_schema, unenforced_keywords
from quantgate.backends._server_fields import described, refusal
from quantgate.backends.ollama._ollama_chat import (
    OllamaChatModel,
    classify,
)
from quantgate.backends.ollama._ollama_fields import digest_field, running_fields, shown_fields, version_field
from quantgate.backends.ollama._ollama_options import DEFAULT_NUM_CTX, OllamaOptions
from quantgate.backends.ollama._ollama_tools import TOOLS_DECODING
from quantgate.inputs._variants import Variant

__all__ = ["DEFAULT_NUM_CTX", "OllamaServer", "classify", "ollama_host", "open_ollama"]

DEFAULT_HOST = "http://127.0.0.1:11434"


def ollama_host(variant: Variant) -> str:
    """The server URL: the variant's `host` option, else `OLLAMA_HOST`, else localhost:11434."""
    raw = options_of(variant, OllamaOptions).host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST
    if "://" not in raw:
        raw = f"http://{raw}"
    parts = urlsplit(raw)
    host = parts.hostname or "127.0.0.1"
    if host == "0.0.0.0":
        host = "127.0.0.1"
    default_port = 443 if parts.scheme == "https" else 11434  # as the ollama client does
    return f"{parts.scheme}://{host}:{parts.port or default_port}"


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
            raise BackendError(f"{self.host}{path} answered {response.status_code}: {refusal(response)}")
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise BackendError(
                f"{self.host}{path} answered {response.status_code} with {described(response)}, not "
                f"Ollama's JSON; is {self.host} an Ollama server? Set OLLAMA_HOST or the variant's host "
                "option to the right address."
            )
        return body

    def version(self) -> str | None:
        """The server's version (`/api/version`); None when it is not a version string."""
        return version_field(self._call("GET", "/api/version").get("version"))

    def show(self, model: str) -> dict[str, Any]:
        """The model's `/api/show` answer, as it came (`shown_fields` keeps what is recorded)."""
        return self._call("POST", "/api/show", json={"model": model})

    def models(self) -> list[dict[str, Any]]:
        """The server's models (`/api/tags`), each as a JSON object."""
        listed = self._call("GET", "/api/tags").get("models")
        return [m for m in listed if isinstance(m, dict)] if isinstance(listed, list) else []

    def digest(self, model: str) -> str | None:
        """The model's digest (`/api/tags`); None when not listed or not a digest."""
        found = next(
            (m.get("digest") for m in self.models() if model in (m.get("model"), m.get("name"))), None
        )
        return digest_field(found)

    def load(self, model: str, keep_alive: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Load `model` with an empty generation, with the options the run's calls will send
        (a call with another `num_ctx` would make the server load it again)."""
        body = {"model": model, "keep_alive": keep_alive, "options": options or {}}
        return self._call("POST", "/api/generate", json=body)

    def running(self, model: str) -> dict[str, Any] | None:
        """The model's `/api/ps` entry, its typed fields only (`running_fields`); None when the
        server does not list it as loaded."""
        loaded = self._call("GET", "/api/ps").get("models")
        entries = [m for m in loaded if isinstance(m, dict)] if isinstance(loaded, list) else []
        found = next((m for m in entries if model in (m.get("model"), m.get("name"))), None)
        return running_fields(found) if found is not None else None

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


def _served_context(running: dict[str, Any]) -> int | None:
    """The context the server runs the model with (`/api/ps` `context_length`), when it says."""
    served = running.get("context_length")
    return served if isinstance(served, int) and served > 0 else None


def _warn_on_context(variant: Variant, running: dict[str, Any], num_ctx: int) -> None:
    """Say so when the server runs the model with a smaller context than the run sends."""
    served = _served_context(running)
    if served is not None and served < num_ctx:
        print(
            f"quantgate: warning: variant {variant.name}: the server runs {variant.model} with a context of "
            f"{served} tokens, not the num_ctx {num_ctx} quantgate sends (the model's own limit, or the "
            "server's): quantgate fits each prompt to that context (each cut recorded on its case)",
            file=sys.stderr,
        )


@dataclass(frozen=True, kw_only=True)
class _Settings:
    """A variant's options for the Ollama backend, with their defaults (docs/ollama.md)."""

    host: str
    num_ctx: int
    max_tokens: int
    seed: int
    timeout_s: float
    first_token_s: float
    keep_alive: str
    num_keep: int
    notice_every_s: float
    max_retries: int
    retry_backoff_s: float

    @classmethod
    def of(cls, variant: Variant) -> _Settings:
        options = options_of(variant, OllamaOptions)
        return cls(
            host=ollama_host(variant),
            num_ctx=options.num_ctx,
            max_tokens=options.max_tokens,
            seed=options.seed,
            timeout_s=options.timeout_s,
            first_token_s=options.first_token_timeout_s,
            keep_alive=str(options.keep_alive),
            num_keep=options.num_keep,
            notice_every_s=options.notice_every_s,
            max_retries=options.max_retries,
            retry_backoff_s=options.retry_backoff_s,
        )


def _chat_model(
    variant: Variant, schema: Mapping[str, Any], settings: _Settings, context: int
) -> OllamaChatModel:
    """`ChatOllama` for the dataset's schema (temperature 0, a fixed seed, `num_ctx` sent), wrapped
    in the call's limits; a silent server ends a read after the shorter of the two timeouts. A
    tool-calling task's tools (one call or several) are sent as `tools`, without `format`."""
    from langchain_ollama import ChatOllama

    native = native_tools_of(schema)
    silence_s = min(settings.first_token_s, settings.timeout_s)
    chat = ChatOllama(
        model=variant.model,
        base_url=settings.host,
        format=None if native is not None else grammar_schema(schema, None, "gbnf"),
        temperature=0.0,
        seed=settings.seed,
        num_ctx=settings.num_ctx,
        num_predict=settings.max_tokens,
        keep_alive=settings.keep_alive,
        client_kwargs={"timeout": httpx.Timeout(silence_s, connect=min(silence_s, 30.0))},
    )
    return OllamaChatModel(
        inner=chat,
        host=settings.host,
        num_ctx=context,
        num_keep=settings.num_keep,
        first_token_timeout_s=settings.first_token_s,
        timeout_s=settings.timeout_s,
        notice_every_s=settings.notice_every_s,
        tools=None if native is None else native.tools,
        many_calls=native is not None and native.many,
    )


class _ChatModels:
    """A variant's chat models, one per record schema: the dataset's, and that of each tool set cases
    bring (`OpenedVariant.for_schema`, asked again for the same tools by each context); each holds its
    own `ChatOllama` and its HTTP client, all closed with the variant (`close`)."""

    def __init__(self, variant: Variant, settings: _Settings, context: int) -> None:
        self._variant, self._settings, self._context = variant, settings, context
        self._models: dict[str, OllamaChatModel] = {}
        self._lock = threading.Lock()

    def of(self, schema: Mapping[str, Any]) -> OllamaChatModel:
        """The chat model for `schema`, made at its first use."""
        key = json.dumps(schema, sort_keys=True)
        with self._lock:
            if key not in self._models:
                self._models[key] = _chat_model(self._variant, schema, self._settings, self._context)
            return self._models[key]

    def close(self) -> None:
        """Close each chat model's client (its connections to the server)."""
        with self._lock:
            for model in self._models.values():
                client = getattr(model.inner, "_client", None)  # `ChatOllama`'s `ollama.Client`
                if client is not None:
                    client.close()
            self._models.clear()


def _decoding(schema: Mapping[str, Any]) -> dict[str, Any]:
    """How the calls are decoded: Ollama's `tools` for any tool-calling task, one call or several,
    whether the dataset or its cases bring the tools (no grammar: nothing of the schema enforced,
    None), or `format`, with the keywords llama.cpp's converter leaves unenforced."""
    if native_tools_of(schema) is not None:
        return {"decoding": TOOLS_DECODING, "unenforced_schema_keywords": None}
    unenforced = [str(k) for k in unenforced_keywords(schema, engine="gbnf")]
    return {
        "decoding": "format: the JSON schema, as a grammar by the server",
        "unenforced_schema_keywords": unenforced,
    }


def _check_tools(variant: Variant, schema: Mapping[str, Any], show: Mapping[str, Any]) -> None:
    """A tool-calling task needs a model whose template takes tools: `/api/show` `capabilities`
    lists `tools` (Ollama answers 400 "does not support tools" to a chat with `tools` otherwise)."""
    capabilities = show.get("capabilities")
    if native_tools_of(schema) is None or not isinstance(capabilities, list) or "tools" in capabilities:
        return
    raise BackendError(
        f"variant {variant.name}: {variant.model} does not support tools (its /api/show capabilities: "
        f"{', '.join(capabilities) or 'none'}): a tool-calling task sends the task's tools, which "
        "Ollama refuses for a model whose template has no tool calls; choose a tag that supports tools"
    )


@contextmanager
def open_ollama(variant: Variant, schema: Mapping[str, Any]) -> Iterator[OpenedVariant]:
    """Open an `ollama:TAG` variant (see the module docstring)."""
    settings = _Settings.of(variant)
    server = OllamaServer(settings.host, settings.timeout_s)
    version = server.version()
    show = shown_fields(server.show(variant.model))
    _check_tools(variant, schema, show)
    started = time.perf_counter()
    loaded = server.load(variant.model, settings.keep_alive, {"num_ctx": settings.num_ctx})
    cold_load_s = time.perf_counter() - started
    running = server.running(variant.model) or {}
    details = show["details"]
    _warn_on_context(variant, running, settings.num_ctx)
    context = min(settings.num_ctx, _served_context(running) or settings.num_ctx)
    models = _ChatModels(variant, settings, context)
    try:
        yield OpenedVariant(
            chat_model=models.of(schema),
            runtime={
                "name": "ollama",
                "version": version,
                "host": settings.host,
                "num_ctx": settings.num_ctx,
                "first_token_timeout_s": settings.first_token_s,
                "timeout_s": settings.timeout_s,
                "seed": settings.seed,
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
                **_decoding(schema),
            },
            context_window=context,
            max_output_tokens=settings.max_tokens,
            quantization=details.get("quantization_level"),
            memory_pid=server.local_pid(),
            reported_memory_bytes=running.get("size"),
            reported_vram_bytes=running.get("size_vram"),
            max_retries=settings.max_retries,
            retry_backoff_s=settings.retry_backoff_s,
            native_tools=native_tools_of(schema) is not None,
            for_schema=models.of,
        )
    finally:
        models.close()
        server.client.close()
