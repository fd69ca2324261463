"""A chat model's answer streamed and timed: the one place that measures time to first token and
the gaps between tokens, and that names the kind of a failed model call. The extraction graph
(`graphs.extraction.extract`) and the load test (`quantgate.loadtest._one_request`) both stream
through it, so a time to first token means the same in a run's records and in a load test's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessage

from evaluators.errors import QuantgateError

__all__ = ["ModelCallError", "StreamedAnswer", "failure_kind", "stream_timed"]


class ModelCallError(QuantgateError, RuntimeError):
    """What a model may raise to say what kind of failure it was and whether to retry.

    Backends translate their transport errors into this (server down, busy, timeout, a
    stream cut in the middle); the graph knows nothing about any particular server.

    Attributes:
        kind: A short name: `connection`, `busy`, `server_error`, `timeout`, `stream_cut`,
            `not_found`, ...
        retryable: Whether calling again may succeed.
    """

    def __init__(self, kind: str, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable


def failure_kind(exc: BaseException) -> str:
    """The kind of a failed model call: a `ModelCallError`'s own; else `timeout` when the
    exception's class name says so (`TimeoutError`, `httpx.ReadTimeout`, ...), else `backend_error`."""
    if isinstance(exc, ModelCallError):
        return exc.kind
    return "timeout" if "timeout" in type(exc).__name__.lower() else "backend_error"


@dataclass(frozen=True, kw_only=True)
class StreamedAnswer:
    """A streamed answer and its instants (`time.perf_counter` seconds).

    Attributes:
        message: The chunks received, merged; None when none came.
        started: When the call was made.
        first: When the first chunk with content came; None when none did.
        last: When the last chunk with content came (`started` when none did).
        ended: When the stream ended or failed.
        chunks: How many chunks had content.
        error: What the stream raised; a failure is kept here, never raised. None: it ended.
    """

    message: AIMessageChunk | None
    started: float
    first: float | None
    last: float
    ended: float
    chunks: int
    error: Exception | None = None

    @property
    def text(self) -> str:
        """The answer's text ("" when nothing came)."""
        return self.message.text if self.message is not None else ""

    @property
    def usage(self) -> Mapping[str, Any]:
        """The token counts the model reported (empty when it reported none)."""
        return (self.message.usage_metadata if self.message is not None else None) or {}

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The response metadata the model reported (empty when nothing came)."""
        return self.message.response_metadata if self.message is not None else {}

    def ttft_s(self, origin: float | None = None) -> float | None:
        """Seconds from `origin` (default: the call) to the first chunk with content; None without one."""
        return self.first - (self.started if origin is None else origin) if self.first is not None else None

    def total_s(self, origin: float | None = None) -> float:
        """Seconds from `origin` (default: the call) to the end of the stream, or its failure."""
        return self.ended - (self.started if origin is None else origin)

    @property
    def inter_token_s(self) -> float | None:
        """The mean gap between chunks with content; None with fewer than two."""
        return (
            (self.last - self.first) / (self.chunks - 1)
            if self.first is not None and self.chunks > 1
            else None
        )


def stream_timed(
    model: BaseChatModel, messages: list[BaseMessage], options: Mapping[str, Any] | None = None
) -> StreamedAnswer:
    """Stream `messages` through `model` with keyword `options`, timing each chunk with content.

    Any `Exception` the stream raises ends it and is kept in the answer's `error` with what came
    before it (`failure_kind` names its kind); nothing is raised.
    """
    started = time.perf_counter()
    first: float | None = None
    last = started
    chunks = 0
    message: AIMessageChunk | None = None
    error: Exception | None = None
    try:
        for chunk in model.stream(messages, **(options or {})):
            if chunk.content:
                last = time.perf_counter()
                first = last if first is None else first
                chunks += 1
            message = chunk if message is None else message + chunk
    except Exception as exc:  # any backend failure is kept on the answer, never raised
        error = exc
    ended = time.perf_counter()
    return StreamedAnswer(
        message=message, started=started, first=first, last=last, ended=ended, chunks=chunks, error=error
    )
