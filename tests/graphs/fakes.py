"""A small fake chat model with queued outputs, usage metadata and optional failures."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk
from pydantic import Field, PrivateAttr

from quantgate.backends.streaming import StreamingChatModel
from quantgate.evaluate.warm_up import WARM_UP_TEXT


class QueuedChatModel(StreamingChatModel):
    """Streams queued outputs in order (the last one repeats). A run's warm-up prompt gets `{`
    and leaves the queue and `calls` as they were. An `Exception` in the queue is raised
    instead; `by_text` maps a substring of the conversation to a fixed output. With
    `max_tokens`, an output longer than that many 7-character pieces is cut there and ends with
    finish reason `length`, as a backend's token limit does."""

    outputs: list[Any]
    by_text: dict[str, Any] = Field(default_factory=dict)
    max_tokens: int | None = None
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "queued-fake"

    @property
    def calls(self) -> list[list[BaseMessage]]:
        return self._calls

    def _next(self, messages: list[BaseMessage]) -> Any:
        text = " ".join(str(m.content) for m in messages)
        if WARM_UP_TEXT in text:  # a run's warm-up prompt: answered, neither queued nor counted
            return "{"
        with self._lock:
            self._calls.append(list(messages))
            for key, output in self.by_text.items():
                if key in text:
                    return output
            index = min(len(self._calls) - 1, len(self.outputs) - 1)
            return self.outputs[index]

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        output = self._next(messages)
        if isinstance(output, BaseException):
            raise output
        pieces = [output[i : i + 7] for i in range(0, len(output), 7)] or [""]
        cut = self.max_tokens is not None and len(pieces) > self.max_tokens
        pieces = pieces[: self.max_tokens] if cut else pieces
        for piece in pieces:
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata={
                    "input_tokens": 100,
                    "output_tokens": len(pieces),
                    "total_tokens": 100 + len(pieces),
                },
                response_metadata={
                    "finish_reason": "length" if cut else "stop",
                    "eval_count": len(pieces),
                    "done": True,
                },
                chunk_position="last",
            )
        )
