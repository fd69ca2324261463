"""One chat call to an Ollama server: named failures, time limits, a word while waiting, and
prompts the server cut.

`OllamaChatModel` wraps langchain-ollama's `ChatOllama` (whose real client code makes the
call) and turns what can go wrong into `ModelCallError`s with a kind, which the extraction
graph retries when a retry can help and otherwise records on the case:

- transport failures (`classify`): a server that is down, busy (HTTP 503, which Ollama answers
  once `OLLAMA_MAX_QUEUE` requests wait), failing, silent, cutting its stream, reporting an
  error in the middle of a 200 stream (docs.ollama.com/api/errors: "If an error occurs
  mid-stream, the error will be returned as an object in the application/x-ndjson format with
  an error property"), or answering something that is not Ollama's JSON at all;
- time: the limits of `quantgate.backends._streaming.TimedChatModel` (first token, silence, whole
  answer). While it waits for a first token, the call says so on stderr every `notice_every_s`
  seconds ("waiting for Ollama ... 40 s of 120 s");
- a prompt the server cut to its context (`server_truncated`): Ollama cuts a prompt longer than
  its context silently, keeping its first `num_keep` tokens and its end, and logs
  `truncating input prompt limit=L prompt=P keep=4 new=L`; the prompt it then evaluates has
  exactly L tokens, L being `num_ctx` or, for its llama.cpp runner, `num_keep + (num_ctx -
  num_keep) // 2`. A call whose `prompt_eval_count` is one of those limits was cut: its answer
  is to another prompt than quantgate sent, so the case is recorded as an error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pydantic
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk

from graphs.streamed import ModelCallError
from quantgate.backends._native_tools import is_malformed_call, tool_answer
from quantgate.backends._server_fields import error_message, refusal
from quantgate.backends._streaming import TimedChatModel, WaitingNotice, status_error

DEFAULT_NOTICE_EVERY_S = 20.0
DEFAULT_NUM_KEEP = 4
"""Ollama's `num_keep`: the prompt tokens its truncation keeps at the start."""


def ollama_error_text(exc: Any) -> str:
    """What an `ollama.ResponseError` said, as a run may record it: the message of Ollama's JSON
    error, else what the body was (an HTML page, its size), never the body itself (the client
    keeps a body that is not JSON whole as the error)."""
    response = getattr(exc.__context__, "response", None)  # the client raises it from httpx's error
    if exc.status_code != -1 and response is not None:
        return refusal(response)
    return error_message({"error": exc.error}) or "no error message"


def classify(exc: BaseException) -> ModelCallError:
    """Name a transport failure and say whether a retry can help."""
    from ollama import ResponseError

    if isinstance(exc, ModelCallError):
        return exc
    if isinstance(exc, ResponseError):
        status, message = exc.status_code, ollama_error_text(exc)
        if status == -1:  # an {"error": ...} line inside a 200 stream (the client gives it no status)
            return ModelCallError(
                "stream_error", f"the server reported an error in the middle of its answer: {message}",
                retryable=True,
            )  # fmt: skip
        return status_error(status, message)
    if isinstance(exc, httpx.TimeoutException):
        return ModelCallError("timeout", f"timed out: {exc}", retryable=True)
    if isinstance(exc, httpx.ConnectError | ConnectionError):
        return ModelCallError("connection", f"server not reachable: {exc}", retryable=True)
    if isinstance(exc, json.JSONDecodeError):
        what = f"the server's answer is not Ollama's JSON lines ({exc}); is it an Ollama server?"
        return ModelCallError("bad_response", what, retryable=False)
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | ValueError):
        cause = (
            type(exc).__name__ if isinstance(exc, pydantic.ValidationError) else exc
        )  # it quotes the input
        return ModelCallError("stream_cut", f"the answer stream was cut: {cause}", retryable=True)
    return ModelCallError("backend_error", f"{type(exc).__name__}: {exc}", retryable=False)


def truncation_limits(num_ctx: int, num_keep: int = DEFAULT_NUM_KEEP) -> frozenset[int]:
    """The prompt lengths Ollama cuts a too-long prompt to, for a context of `num_ctx` tokens."""
    return frozenset({num_ctx, num_keep + (num_ctx - num_keep) // 2})


class OllamaChatModel(TimedChatModel):
    """`ChatOllama` whose failures, slowness and cut prompts are raised as `ModelCallError`s.

    Attributes:
        inner: The `ChatOllama` that makes the call (the time limits: `TimedChatModel`).
        host: The server, for messages.
        num_ctx: The context sent with each call (`options.num_ctx`).
        num_keep: The server's `num_keep`.
        notice_every_s: How often a call still waiting for its first token says so (0: never).
        tools: The task's tools, sent as Ollama's `tools` (a tool-calling task; `inner` then has no
            `format`; none sent when empty: a task whose cases bring their tools); the answer is
            read back into the task's record (`ollama_tools`).
        many_calls: The task's record holds several calls (`{"calls": [...]}`, `"calls": "many"`).
    """

    host: str = ""
    num_ctx: int | None = None
    num_keep: int = DEFAULT_NUM_KEEP
    notice_every_s: float = DEFAULT_NOTICE_EVERY_S
    tools: list[dict[str, Any]] | None = None
    many_calls: bool = False

    @property
    def _llm_type(self) -> str:
        return "quantgate-ollama"

    @property
    def server(self) -> str:
        return self.host

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        if self.tools is None:
            return self._chunks(messages, stop, **kwargs)
        return tool_answer(self._chunks(messages, stop, tools=self.tools, **kwargs), many=self.many_calls)

    def _is_silence(self, exc: BaseException) -> bool:
        return isinstance(exc, httpx.TimeoutException)

    def _failure(self, exc: Exception, received: int) -> BaseException:
        if self.tools is not None and is_malformed_call(exc):
            return exc  # an answer, not a failure of the call: `tool_answer` records it
        return classify(exc)

    def _chunks(
        self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        model = getattr(self.inner, "model", "the model")
        what = f"Ollama at {self.host} to answer with {model} (first token)"
        prompt_tokens: int | None = None
        with WaitingNotice(what, self.first_token_timeout_s, self.notice_every_s) as waiting:
            for chunk in self._timed(messages, stop, **kwargs):
                waiting.stop()
                prompt_tokens = chunk.response_metadata.get("prompt_eval_count", prompt_tokens)
                yield ChatGenerationChunk(message=chunk)
        self._check_truncation(prompt_tokens)

    def _check_truncation(self, prompt_tokens: int | None) -> None:
        if self.num_ctx is None or prompt_tokens is None:
            return
        if prompt_tokens in truncation_limits(self.num_ctx, self.num_keep):
            raise ModelCallError(
                "server_truncated",
                f"the server cut the prompt to {prompt_tokens} tokens (its prompt_eval_count), the limit "
                f"of a context of {self.num_ctx} tokens: the answer is to part of the prompt; raise the "
                "variant's num_ctx option, or check the server's context (OLLAMA_CONTEXT_LENGTH, the "
                "model's own limit)",
                retryable=False,
            )
