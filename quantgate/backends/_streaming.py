"""Streaming chat models: `StreamingChatModel`, a chat model defined by its token stream alone
(`invoke` gathers the stream); `MessagesChatModel`, one whose stream depends on the messages alone
(the fake models of tests and benchmarks); and `TimedChatModel`, the one implementation of a
server's stream under time limits, which the server backends (Ollama, OpenAI-compatible) share.

The time limits of a call to a server: the first token must come within `first_token_timeout_s`
(waiting in the server's queue and reading the prompt included), no silence may last longer (the
client's read timeout is `min(first_token_timeout_s, timeout_s)`), and the whole answer must end
within `timeout_s`. Each limit broken is a retryable `ModelCallError` of kind `timeout`; any other
failure is named by the backend (`TimedChatModel._failure`). `status_error` names an HTTP status the
same way for every server.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from tqdm import tqdm

from graphs.streamed import ModelCallError

__all__ = [
    "DEFAULT_FIRST_TOKEN_TIMEOUT_S",
    "DEFAULT_TIMEOUT_S",
    "MessagesChatModel",
    "StreamingChatModel",
    "TimedChatModel",
    "WaitingNotice",
    "status_error",
]

DEFAULT_FIRST_TOKEN_TIMEOUT_S = 120.0
"""Longest wait for a server's first token (and longest silence), in seconds."""

DEFAULT_TIMEOUT_S = 600.0
"""Longest a server's whole answer may take, in seconds."""


class StreamingChatModel(BaseChatModel):
    """Base for chat models that implement `_stream`: `_generate` is the gathered stream."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return generate_from_stream(self._stream(messages, stop, run_manager, **kwargs))


class MessagesChatModel(StreamingChatModel):
    """Base for chat models whose answer depends on the messages alone, not on `stop`, callbacks
    or call options (the fakes of tests and benchmarks): they implement `_answer`."""

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        return self._answer(messages)

    def _answer(self, messages: list[BaseMessage]) -> Iterator[ChatGenerationChunk]:
        raise NotImplementedError


def status_error(status: int, message: str, *, unauthorized: str | None = None) -> ModelCallError:
    """An HTTP error status of a server named, and whether a retry can help: 404 `not_found`, 429
    and 503 `busy`, other 5xx `server_error`, other 4xx `bad_request`; 401 and 403 `unauthorized`
    when the backend has credentials to check (`unauthorized`: what to check)."""
    if unauthorized is not None and status in (401, 403):
        what = f"the server refused the API key ({status}): {message}; {unauthorized}"
        return ModelCallError("unauthorized", what, retryable=False)
    if status == 404:
        return ModelCallError("not_found", f"model or path not found (404): {message}", retryable=False)
    if status in (429, 503):
        return ModelCallError("busy", f"server busy ({status}): {message}", retryable=True)
    if status >= 500:
        return ModelCallError("server_error", f"server error {status}: {message}", retryable=True)
    return ModelCallError("bad_request", f"request refused ({status}): {message}", retryable=False)


class TimedChatModel(StreamingChatModel):
    """Base for a server's chat model: the stream of `inner` under the time limits of the module,
    its failures raised as `ModelCallError`s. Subclasses implement `_stream` over `_timed`, and
    say what a read timeout is (`_is_silence`) and how other failures are named (`_failure`).

    Attributes:
        inner: The LangChain chat model that makes the call; its client's read timeout should be
            `min(first_token_timeout_s, timeout_s)`, so that a silent server ends the call.
        first_token_timeout_s: Longest wait for the first token (and longest silence).
        timeout_s: Longest a whole answer may take.
    """

    inner: BaseChatModel
    first_token_timeout_s: float = DEFAULT_FIRST_TOKEN_TIMEOUT_S
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def server(self) -> str:
        """The server, for messages."""
        raise NotImplementedError

    def _is_silence(self, exc: BaseException) -> bool:
        """`exc` is the client's read timeout (the server said nothing for the silence limit)."""
        raise NotImplementedError

    def _failure(self, exc: Exception, received: int) -> BaseException:
        """What a failure after `received` chunks is raised as: a named `ModelCallError`, or `exc`
        itself when it is an answer rather than a failure of the call."""
        raise NotImplementedError

    def _timed(
        self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any
    ) -> Iterator[AIMessageChunk]:
        """The chunks of `inner`'s stream, ended by a `timeout` past `timeout_s` or a silence."""
        started = time.monotonic()
        received = 0
        try:
            for chunk in self.inner.stream(messages, stop=stop, **kwargs):
                if time.monotonic() - started > self.timeout_s:
                    what = f"the answer took longer than {self.timeout_s:g} s (timeout_s)"
                    raise ModelCallError("timeout", what, retryable=True)
                received += 1
                yield chunk
        except ModelCallError:
            raise
        except Exception as exc:
            if self._is_silence(exc):
                raise self._silence(started) from exc
            failure = self._failure(exc, received)
            if failure is exc:
                raise
            raise failure from exc

    def _silence(self, started: float) -> ModelCallError:
        silent = min(self.first_token_timeout_s, self.timeout_s)
        return ModelCallError(
            "timeout",
            f"no answer from {self.server} for {silent:g} s (first_token_timeout_s / timeout_s; waited "
            f"{time.monotonic() - started:.0f} s in all): the server is hung, or busy with other requests",
            retryable=True,
        )


class WaitingNotice:
    """Says on stderr, every `every_s` seconds (0: never) until `stop`, how long a call has waited
    for `what`, of its limit `limit_s`."""

    def __init__(self, what: str, limit_s: float, every_s: float) -> None:
        self.what, self.limit_s, self.every_s = what, limit_s, every_s
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="quantgate-waiting")

    def _run(self) -> None:
        started = time.monotonic()
        while not self._stopped.wait(self.every_s):
            waited = time.monotonic() - started
            tqdm.write(
                f"quantgate: waiting for {self.what}: {waited:.0f} s of {self.limit_s:g}", file=sys.stderr
            )

    def __enter__(self) -> WaitingNotice:
        if self.every_s > 0:
            self._thread.start()
        return self

    def stop(self) -> None:
        """No more notices."""
        self._stopped.set()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
