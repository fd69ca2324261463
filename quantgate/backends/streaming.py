"""A chat model defined by its token stream alone; `invoke` gathers the stream. `MessagesChatModel`:
one whose stream depends on the messages alone (the fake models of tests and benchmarks)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult


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
