"""The warm-up prompt: the run's prompt prefix with a placeholder text, sent before a variant's
first case so that every case meets the same state (the shared prefix read, cached where the
backend caches it), and timed as the variant's cold first token.

Every executor warms a variant up before its cases (a round's worker, a Ray task), so a
quantized variant's outputs do not depend on where it ran: a prefix read in one batch and reused
gives slightly different numbers from one read with the case's text, which can change a greedy
choice.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import cast

from langchain_core.messages import BaseMessage, BaseMessageChunk

from graphs.extraction import ExtractionContext
from graphs.long_inputs import prompt_messages

__all__ = ["WARM_UP_TEXT", "first_token_s"]

WARM_UP_TEXT = "(warm-up: no text yet)"
"""The case text of the warm-up prompt; its answer is discarded."""


def first_token_s(context: ExtractionContext, *, to_the_end: bool = False) -> float | None:
    """Seconds to the first token of the warm-up prompt (the run's prompt prefix and
    `WARM_UP_TEXT`); the answer is dropped after its first token, or read to its end with
    `to_the_end` (the load test: a server must be at rest when the first level starts, and one
    that goes on generating a dropped answer is not: the Ollama double with one slot and no queue
    refused the first level's requests as busy).

    None when nothing came, or when the call failed (a busy server, a cut stream): the warm-up
    is a measurement, not a case, so its failure leaves the figure missing and the variant's
    cases meet the server as it is (with their retries, their failures recorded on them).
    """
    messages: list[BaseMessage] = prompt_messages(context, WARM_UP_TEXT)[0]
    started, first = time.perf_counter(), None
    try:
        stream = cast(Generator[BaseMessageChunk, None, None], context.model.stream(messages))
        try:
            for chunk in stream:
                if chunk.content and first is None:
                    first = time.perf_counter() - started
                if first is not None and not to_the_end:
                    return first
        finally:
            stream.close()  # the backend stops generating (a slot is freed)
    except Exception:  # as the graph does for a case: a backend failure is never raised
        return None
    return first
