"""One Ollama chat call's limits, without a server: a word while waiting for the first token,
the first-token and whole-answer timeouts, and prompts the server cut to its context."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk
from pydantic import Field

from graphs.streamed import ModelCallError
from quantgate.backends._streaming import MessagesChatModel
from quantgate.backends.ollama._ollama_chat import OllamaChatModel


class ScriptedServer(MessagesChatModel):
    """Stands in for `ChatOllama`: waits `first_s`, then streams `pieces` `every_s` apart, the last
    chunk carrying `prompt_eval_count`; or raises `error` after the wait."""

    model: str = "gemma3:12b"
    first_s: float = 0.0
    every_s: float = 0.0
    pieces: list[str] = Field(default_factory=lambda: ["{", "}"])
    prompt_eval_count: int = 1000
    error: Any = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _answer(self, messages: list[BaseMessage]) -> Iterator[ChatGenerationChunk]:
        time.sleep(self.first_s)
        if self.error is not None:
            raise self.error
        for piece in self.pieces:
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
            time.sleep(self.every_s)
        metadata = {"prompt_eval_count": self.prompt_eval_count, "done": True}
        yield ChatGenerationChunk(message=AIMessageChunk(content="", response_metadata=metadata))


def call(server: ScriptedServer, **limits: Any) -> str:
    model = OllamaChatModel(inner=server, host="http://gpu-box:11434", num_ctx=4096, **limits)
    return str(model.invoke([HumanMessage(content="extract")]).content)


def test_an_answer_within_the_limits_comes_through():
    assert call(ScriptedServer()) == "{}"


@pytest.mark.parametrize("cut_to", [4096, 2050])
def test_a_prompt_the_server_cut_to_its_context_is_an_error_saying_so(cut_to):
    with pytest.raises(ModelCallError) as caught:
        call(ScriptedServer(prompt_eval_count=cut_to))
    assert caught.value.kind == "server_truncated"
    assert not caught.value.retryable
    assert f"the server cut the prompt to {cut_to} tokens (its prompt_eval_count)" in str(caught.value)
    assert "raise the variant's num_ctx option" in str(caught.value)


@pytest.mark.parametrize("fits", [4095, 2049, 2051, 100])
def test_a_prompt_of_another_length_is_not_taken_for_a_cut_one(fits):
    assert call(ScriptedServer(prompt_eval_count=fits)) == "{}"


def test_a_call_waiting_for_its_first_token_says_so_until_it_comes(capsys):
    call(ScriptedServer(first_s=0.45, every_s=0.2, pieces=["{", "", "}"]), notice_every_s=0.1)
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert 3 <= len(lines) <= 5  # every 0.1 s for 0.45 s; none while the tokens come
    waiting = "waiting for Ollama at http://gpu-box:11434 to answer with gemma3:12b (first token)"
    assert lines[0] == f"quantgate: {waiting}: 0 s of 120"


def test_a_silent_server_ends_in_a_timeout_naming_the_limit():
    with pytest.raises(ModelCallError) as caught:
        call(ScriptedServer(error=httpx.ReadTimeout("timed out")), first_token_timeout_s=30)
    assert caught.value.kind == "timeout"
    assert caught.value.retryable
    assert str(caught.value).startswith(
        "no answer from http://gpu-box:11434 for 30 s (first_token_timeout_s / timeout_s;"
    )


def test_an_answer_longer_than_its_whole_timeout_is_stopped():
    with pytest.raises(ModelCallError, match=r"the answer took longer than 0.2 s \(timeout_s\)") as caught:
        call(ScriptedServer(every_s=0.15, pieces=["{", " ", " ", "}"]), timeout_s=0.2)
    assert caught.value.kind == "timeout"
