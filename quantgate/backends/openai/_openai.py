"""The OpenAI-compatible backend: `openai:MODEL@BASE_URL` variants served by any server that speaks
the OpenAI chat API (vLLM, llama.cpp's server, llama-cpp-python's `llama_cpp.server`, LM Studio),
through LangChain's `ChatOpenAI` with streaming.

A variant names the server's model (`model`) and its options `base_url` (required, ending in
`/v1`) and `api_key_env`: the name of an environment variable holding the key. The key itself is
read when the variant is opened and never written to `variants.json` or a log. With the option
`native_tools` a tool-calling task's tools go as the request's `tools` instead of the record schema
(`quantgate.backends.openai._openai_tools`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from langchain_core.messages import BaseMessage

from quantgate._hardware import package_version
from quantgate.backends import BackendError, OpenedVariant
from quantgate.backends._backend_options import options_of
from quantgate.backends._base_prompt import render_prompt
from quantgate.backends._native_tools import NativeTools, native_tools_of
from quantgate.backends._schema_grammar import grammar_schema, unenforced_keywords
from quantgate.backends.openai._openai_chat import OpenAIServerChatModel, probe_refusal
from quantgate.backends.openai._openai_completions import (
    COMPLETION_FORMATS,
    CompletionChatModel,
    choose_completion_format,
    completion_body,
    completion_client,
    completion_decoding,
    extra_body_option,
)
from quantgate.backends.openai._openai_metadata import local_pid, server_metadata_or_error
from quantgate.backends.openai._openai_options import OpenAIOptions
from quantgate.backends.openai._openai_tools import (
    TOOLS_DECODING,
    native_tools_option,
    probe_tools,
    tool_chat_openai,
    tool_fields,
    tools_refused,
)
from quantgate.inputs._variants import Variant

__all__ = [
    "APIS",
    "NO_SCHEMA_DECODING",
    "RESPONSE_FORMATS",
    "completion_prompt",
    "open_openai",
    "openai_endpoint",
]

NO_SCHEMA_DECODING = "no response_format: validation and repairs only"
"""`runtime.decoding` of a variant whose server takes no JSON schema."""


def openai_endpoint(variant: Variant) -> tuple[str, str, str | None]:
    """The server a variant talks to: its base URL (no trailing slash), the server's model name and
    the API key read from the variable its `api_key_env` option names (None when it names none).

    Raises:
        BackendError: No `base_url` option, one that is not an http(s) URL, or an `api_key_env`
            naming a variable that is not set.
    """
    options = options_of(variant, OpenAIOptions)
    base_url = options.base_url
    if base_url is None or not base_url.strip():
        raise BackendError(
            f"variant {variant.name}: backend 'openai' needs the option base_url, the server's OpenAI API "
            'root, e.g. options.base_url = "http://127.0.0.1:8000/v1" (or openai:MODEL@BASE_URL)'
        )
    if not base_url.startswith(("http://", "https://")):
        raise BackendError(f"variant {variant.name}: base_url {base_url!r} is not an http:// or https:// URL")
    _check_url(variant.name, base_url)
    if not variant.model:
        raise BackendError(f"variant {variant.name}: backend 'openai' needs the server's model name as model")
    key_env = options.api_key_env
    if key_env is None:
        return base_url.rstrip("/"), variant.model, None
    if not key_env:
        raise BackendError(
            f"variant {variant.name}: api_key_env must be the NAME of an environment variable, "
            f"got {key_env!r}"
        )
    key = os.environ.get(key_env)
    if not key:
        raise BackendError(
            f"variant {variant.name}: the environment variable {key_env} (its api_key_env option) is not "
            "set; "
            f"export {key_env}=<the server's API key>"
        )
    return base_url.rstrip("/"), variant.model, key


def _check_url(name: str, base_url: str) -> None:
    """Refuse a base URL no client can connect to (`http://[::1/v1`, a port that is not a number),
    naming the variant, so that the variant fails to open and the others run."""
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 - parsed on access: a port that is not a number between 0 and 65535 raises
    except ValueError as exc:
        raise BackendError(f"variant {name}: base_url {base_url!r} is not a valid URL: {exc}") from None
    if not parts.hostname:
        raise BackendError(f"variant {name}: base_url {base_url!r} names no host")


APIS = ("chat", "completions")
"""The `api` option: `chat` (`/v1/chat/completions`; the server's chat template makes the prompt
text) or `completions` (`/v1/completions` with the prompt text quantgate renders for a base model,
`render_prompt`, as the embedded backend reads it)."""


def completion_prompt(variant: Variant) -> Callable[[Sequence[BaseMessage]], str] | None:
    """How the variant's messages become the prompt text its server reads, when quantgate knows it:
    `render_prompt` under `api = "completions"`; None under the chat API (the server's template).

    Raises:
        BackendError: An `api` option that is not one of `APIS`.
    """
    api = options_of(variant, OpenAIOptions).api
    if api not in APIS:
        raise BackendError(f"variant {variant.name}: api {api!r} is not one of {', '.join(APIS)}")
    return render_prompt if api == "completions" else None


RESPONSE_FORMATS = ("auto", "json_schema", "json_object", "none")
"""The `response_format` option under the chat API: how the dataset's JSON schema is sent (see
`_response_format`); under `api = "completions"`, `COMPLETION_FORMATS`."""


@dataclass(frozen=True, kw_only=True)
class _Settings:
    """A variant's options for the OpenAI-compatible backend, with their defaults."""

    max_tokens: int
    seed: int
    timeout_s: float
    first_token_s: float
    response_format: str
    api: str
    extra_body: dict[str, Any]
    max_retries: int
    retry_backoff_s: float

    @classmethod
    def of(cls, variant: Variant) -> _Settings:
        options = options_of(variant, OpenAIOptions)
        api = "completions" if completion_prompt(variant) else "chat"
        formats = COMPLETION_FORMATS if api == "completions" else RESPONSE_FORMATS
        if options.response_format not in formats:
            raise BackendError(
                f"variant {variant.name}: response_format {options.response_format!r} is not one of "
                f"{', '.join(formats)} (api = {api!r})"
            )
        return cls(
            api=api,
            extra_body=extra_body_option(variant),
            max_tokens=options.max_tokens,
            seed=options.seed,
            timeout_s=options.timeout_s,
            first_token_s=options.first_token_timeout_s,
            response_format=options.response_format,
            max_retries=options.max_retries,
            retry_backoff_s=options.retry_backoff_s,
        )

    @property
    def silence_s(self) -> float:
        """The client's read timeout: no byte for this long ends the call."""
        return min(self.first_token_s, self.timeout_s)


def _response_format(kind: str, schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """The request's `response_format` for the schema: OpenAI's `json_schema` (vLLM, llama.cpp's
    `llama-server`, LM Studio), or `json_object` carrying the schema rewritten for llama.cpp's
    converter (llama-cpp-python's `llama_cpp.server`, which refuses `json_schema`), or none."""
    if kind == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "record", "schema": dict(schema), "strict": True},
        }
    if kind == "json_object":
        return {"type": "json_object", "schema": grammar_schema(schema, None, "gbnf")}
    return None


def _chat(
    endpoint: tuple[str, str, str | None],
    settings: _Settings,
    response_format: Any,
    max_tokens: int,
    *,
    tools: NativeTools | None = None,
) -> Any:
    """`ChatOpenAI` streaming greedy answers (temperature 0, a fixed seed), usage asked for, no
    retries of its own (the graph retries), a read timeout of the variant's silence limit. The
    limit goes as `max_completion_tokens` and as `max_tokens`, which llama-cpp-python reads.
    With `tools` (native tools) the tools go in the request and the answer comes whole, not
    streamed, within `timeout_s` (`quantgate.backends.openai._openai_tools`)."""
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    base_url, model, key = endpoint
    body: dict[str, Any] = {**settings.extra_body, "max_tokens": max_tokens}
    if response_format:  # in the body, not as ChatOpenAI's own response_format (it would parse the answer)
        body["response_format"] = response_format
    body.update(tool_fields(tools) if tools is not None else {})
    streamed = tools is None
    chat = ChatOpenAI if streamed else tool_chat_openai()
    return chat(
        model=model,
        base_url=base_url,
        api_key=SecretStr(key or "no-key"),  # the client insists on one; a server without keys ignores it
        temperature=0.0,
        seed=settings.seed,
        max_completion_tokens=max_tokens,
        extra_body=body,
        timeout=settings.silence_s if streamed else settings.timeout_s,
        max_retries=0,
        streaming=streamed,
        stream_usage=streamed,
        disable_streaming=not streamed,
    )


def _choose_format(
    variant: Variant, endpoint: tuple[str, str, str | None], settings: _Settings, schema: Mapping[str, Any]
) -> tuple[str, Any]:
    """The response format the server takes, asked with one-token calls: the variant's, or under
    `auto` `json_schema`, else `json_object` with the schema, else none (validation and repairs
    only, said on stderr). A server not listening, a refused key or an unknown model fails the
    variant here."""
    kinds = (
        ("json_schema", "json_object", "none")
        if settings.response_format == "auto"
        else (settings.response_format,)
    )
    refusals: list[str] = []
    for kind in kinds:
        refused = probe_refusal(_chat(endpoint, settings, _response_format(kind, schema), 1))
        if refused is None:
            if refusals:
                print(
                    f"quantgate: variant {variant.name}: the server refused response_format "
                    f"{', '.join(refusals)}; using {kind}",
                    file=sys.stderr,
                )
            return kind, _chat(endpoint, settings, _response_format(kind, schema), settings.max_tokens)
        if refused.kind in ("connection", "unauthorized", "not_found") or kind == "none":
            raise BackendError(f"variant {variant.name}: {endpoint[0]}: {refused}")
        refusals.append(f"{kind} ({refused})")
    raise BackendError(f"variant {variant.name}: the server refused response_format {'; '.join(refusals)}")


def _decoding(kind: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """How the calls are decoded (`runtime.decoding`) and the schema keywords llama.cpp's converter
    leaves unenforced (`json_object` only; for `json_schema` the server's engine is unknown: None)."""
    if kind == "none":
        return {"decoding": NO_SCHEMA_DECODING, "unenforced_schema_keywords": None}
    if kind == "json_object":
        return {
            "decoding": "response_format json_object with the JSON schema (llama-cpp-python): a grammar",
            "unenforced_schema_keywords": [str(k) for k in unenforced_keywords(schema, engine="gbnf")],
        }
    return {
        "decoding": "response_format json_schema, enforced by the server",
        "unenforced_schema_keywords": None,
    }


def _open_completions(
    variant: Variant, endpoint: tuple[str, str, str | None], settings: _Settings, schema: Mapping[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """`api = "completions"`: the way of sending the schema the server is shown to enforce
    (`choose_completion_format`, said on stderr when `auto` fell back), the completion client
    read as a chat model, and what the runtime records of it."""
    kind, shown = choose_completion_format(
        variant.name,
        endpoint,
        settings.response_format,
        seed=settings.seed,
        timeout_s=settings.silence_s,
        extra_body=settings.extra_body,
    )
    if settings.response_format == "auto" and kind != "grammar":
        print(
            f"quantgate: variant {variant.name}: the server did not enforce "
            f"{'; '.join(f'{k} ({v})' for k, v in shown.items())}; using {kind}",
            file=sys.stderr,
        )
    runtime = {
        "client": f"langchain-openai {package_version('langchain-openai')} (OpenAI, /v1/completions)",
        "prompt": "render_prompt: the embedded backend's plain few-shot text",
        "structured_output_probe": shown,
        **completion_decoding(kind, schema),
    }
    return _client(endpoint, settings, kind, schema), {"response_format": kind, **runtime}


def _open_tools(
    variant: Variant, endpoint: tuple[str, str, str | None], settings: _Settings, tools: NativeTools
) -> tuple[Any, dict[str, Any]]:
    """Native tools: a one-token call with the tools shows the server takes them; the client, and
    what the runtime records of it (no response format: `none`). A schema that offers no tool (its
    cases bring their own) is probed with a stand-in tool, so that it opens natively as any other."""
    refused = probe_refusal(_chat(endpoint, settings, None, 1, tools=probe_tools(tools)))
    if refused is not None:
        raise tools_refused(variant, endpoint[0], refused)
    runtime = {
        "client": f"langchain-openai {package_version('langchain-openai')}",
        "native_tools": True,
        "decoding": TOOLS_DECODING,
        "unenforced_schema_keywords": None,
    }
    return _chat(endpoint, settings, None, settings.max_tokens, tools=tools), {
        "response_format": "none",
        **runtime,
    }


def _open_chat(
    variant: Variant, endpoint: tuple[str, str, str | None], settings: _Settings, schema: Mapping[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """The chat API: the response format the server takes (`_choose_format`), its client, and what
    the runtime records of it."""
    kind, chat = _choose_format(variant, endpoint, settings, schema)
    runtime = {"client": f"langchain-openai {package_version('langchain-openai')}", **_decoding(kind, schema)}
    return chat, {"response_format": kind, **runtime}


@contextmanager
def open_openai(variant: Variant, schema: Mapping[str, Any]) -> Iterator[OpenedVariant]:
    """Open an `openai:` variant: its endpoint, its options, how the server holds answers to the
    schema (asked with short calls), on the chat API or, with `api = "completions"`, the completions;
    with `native_tools`, a tool-calling task's tools as the request's `tools`."""
    endpoint = openai_endpoint(variant)
    settings = _Settings.of(variant)
    native = native_tools_option(variant, schema, settings.api)
    started = time.perf_counter()
    if native is not None:
        inner, recorded = _open_tools(variant, endpoint, settings, native)
    else:
        opening = _open_completions if settings.api == "completions" else _open_chat
        inner, recorded = opening(variant, endpoint, settings, schema)
    probe_s = time.perf_counter() - started

    def served(inner: Any) -> OpenAIServerChatModel:
        return OpenAIServerChatModel(
            inner=inner,
            base_url=endpoint[0],
            first_token_timeout_s=settings.first_token_s,
            timeout_s=settings.timeout_s,
            tool_calls=None if native is None else "many" if native.many else "one",
        )

    kind = "tools" if native is not None else recorded["response_format"]
    yield OpenedVariant(
        chat_model=served(inner),
        runtime={
            "name": "openai-compatible",
            "api": settings.api,
            "base_url": endpoint[0],
            "model": endpoint[1],
            "api_key_env": variant.options.get("api_key_env"),
            "extra_body": settings.extra_body,
            "first_token_timeout_s": settings.first_token_s,
            "timeout_s": settings.timeout_s,
            "seed": settings.seed,
            "temperature": 0.0,
            "probe_s": probe_s,
            **recorded,
            **server_metadata_or_error(endpoint),
        },
        max_output_tokens=settings.max_tokens,
        memory_pid=local_pid(endpoint[0]),
        max_retries=settings.max_retries,
        retry_backoff_s=settings.retry_backoff_s,
        native_tools=native is not None,
        for_schema=lambda other: served(_client(endpoint, settings, kind, other)),
    )


def _client(
    endpoint: tuple[str, str, str | None], settings: _Settings, kind: str, schema: Mapping[str, Any]
) -> Any:
    """The client of the chosen way of sending a schema (`kind`; `tools`: native tools) for another
    record schema: a case's own, when cases bring their own tools (no new probe: the server took that
    way)."""
    if kind == "tools":
        return _chat(endpoint, settings, None, settings.max_tokens, tools=native_tools_of(schema))
    if settings.api != "completions":
        return _chat(endpoint, settings, _response_format(kind, schema), settings.max_tokens)
    body = completion_body(kind, schema, settings.extra_body)
    client = completion_client(
        endpoint, seed=settings.seed, timeout_s=settings.silence_s, body=body, max_tokens=settings.max_tokens
    )
    return CompletionChatModel(llm=client)
