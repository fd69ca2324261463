"""The time limits and failure names the server backends share (`quantgate.backends._streaming`):
the Ollama and the OpenAI-compatible chat models stop a call the same way, without a server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk

from graphs.streamed import ModelCallError
from quantgate.backends._streaming import MessagesChatModel, TimedChatModel, status_error
from quantgate.backends.ollama._ollama_chat import OllamaChatModel
from quantgate.backends.openai._openai_chat import OpenAIServerChatModel


class SlowServer(MessagesChatModel):
    """Streams `pieces` `every_s` apart (the last with a `finish_reason`), or raises `error`."""

    pieces: tuple[str, ...] = ("{", "}")
    every_s: float = 0.0
    error: Any = None

    @property
    def _llm_type(self) -> str:
        return "slow"

    def _answer(self, messages: list[BaseMessage]) -> Iterator[ChatGenerationChunk]:
        if self.error is not None:
            raise self.error
        for i, piece in enumerate(self.pieces):
            metadata = {"finish_reason": "stop"} if i == len(self.pieces) - 1 else {}
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece, response_metadata=metadata))
            time.sleep(self.every_s)


def ollama(inner: SlowServer, **limits: Any) -> TimedChatModel:
    return OllamaChatModel(inner=inner, host="http://box:11434", notice_every_s=0, **limits)


def openai(inner: SlowServer, **limits: Any) -> TimedChatModel:
    return OpenAIServerChatModel(inner=inner, base_url="http://box:11434", **limits)


BACKENDS = pytest.mark.parametrize("wrap", [ollama, openai], ids=["ollama", "openai"])


@BACKENDS
def test_an_answer_within_the_limits_comes_through_either_backend(wrap):
    assert wrap(SlowServer()).invoke([HumanMessage("x")]).content == "{}"


@BACKENDS
def test_an_answer_past_its_whole_limit_is_stopped_alike_by_either_backend(wrap):
    model = wrap(SlowServer(pieces=("{", " ", " ", " ", "}"), every_s=0.1), timeout_s=0.15)
    with pytest.raises(ModelCallError) as caught:
        model.invoke([HumanMessage("x")])
    assert (caught.value.kind, caught.value.retryable) == ("timeout", True)
    assert str(caught.value) == "the answer took longer than 0.15 s (timeout_s)"


@BACKENDS
def test_a_silent_server_is_named_alike_by_either_backend(wrap):
    model = wrap(SlowServer(error=httpx.ReadTimeout("timed out")), first_token_timeout_s=30, timeout_s=20)
    with pytest.raises(ModelCallError) as caught:
        model.invoke([HumanMessage("x")])
    assert (caught.value.kind, caught.value.retryable) == ("timeout", True)
    assert str(caught.value).startswith(
        "no answer from http://box:11434 for 20 s (first_token_timeout_s / timeout_s; waited "
    )


@pytest.mark.parametrize(
    ("status", "unauthorized", "kind", "retryable"),
    [
        (401, None, "bad_request", False),
        (403, "check the key", "unauthorized", False),
        (404, None, "not_found", False),
        (429, None, "busy", True),
        (503, None, "busy", True),
        (502, None, "server_error", True),
        (422, None, "bad_request", False),
    ],
)
def test_an_http_status_is_named_once_for_every_server(status, unauthorized, kind, retryable):
    named = status_error(status, "the body", unauthorized=unauthorized)
    assert (named.kind, named.retryable) == (kind, retryable)
    assert f"({status})" in str(named) or f"error {status}:" in str(named)
    assert str(named).endswith("the body" if unauthorized is None else "the body; check the key")
