"""One load-test request: a prompt streamed through a chat model and timed, never raised.

Shared by the closed levels (`quantgate.loadtest.levels`) and the open-loop Poisson levels
(`quantgate.loadtest.arrivals`). A Poisson request is timed from its scheduled arrival, so the
wait in the client before it could be sent counts in its time to first token, as a user sees it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from evaluators.load import INVALID_OUTPUT, LoadRequest
from graphs.extraction import ModelCallError

__all__ = ["Prompt", "stream_request"]

Prompt = tuple[str, list[BaseMessage]]
"""A case id and the messages sent for it."""


def stream_request(
    model: BaseChatModel,
    prompt: Prompt,
    check: Callable[[str], bool],
    *,
    level: str,
    slot: int,
    t0: float,
    arrived: float | None = None,
) -> LoadRequest:
    """Stream one prompt and time it; a failure is recorded with its kind, never raised.

    Args:
        model, prompt, check: The chat model, the case id and messages, whether an answer is valid.
        level, slot, t0: Recorded on the request: level name, worker, `perf_counter` at the level's start.
        arrived: The scheduled arrival (`perf_counter` time) of an open-loop request: times are
            measured from it, and the wait until sending is `queued_s`. None: from sending.
    """
    started = time.perf_counter()
    origin = started if arrived is None else arrived
    first: float | None = None
    last = started
    chunks = 0
    message = None
    error: tuple[str, str] | None = None
    try:
        for chunk in model.stream(prompt[1]):
            if chunk.content:
                last = time.perf_counter()
                first = last if first is None else first
                chunks += 1
            message = chunk if message is None else message + chunk
    except ModelCallError as exc:
        error = (exc.kind, str(exc))
    except Exception as exc:  # any backend failure is counted, never raised
        kind = "timeout" if "timeout" in type(exc).__name__.lower() else "backend_error"
        error = (kind, f"{type(exc).__name__}: {exc}")
    total = time.perf_counter() - origin
    usage: Mapping[str, Any] = (message.usage_metadata if message is not None else None) or {}
    tokens = usage.get("output_tokens") or (chunks or None)
    valid = None if error else check(message.text if message is not None else "")
    if error is None and not valid:
        error = (INVALID_OUTPUT, "the answer does not parse as JSON matching the schema")
    return LoadRequest(
        level=level,
        slot=slot,
        case_id=prompt[0],
        started_s=origin - t0,
        ttft_s=first - origin if first is not None else None,
        total_s=total,
        output_tokens=tokens if not error or error[0] == INVALID_OUTPUT else None,
        inter_token_s=(last - first) / (chunks - 1) if first is not None and chunks > 1 else None,
        valid=valid,
        error_kind=error[0] if error else None,
        error=error[1] if error else None,
        queued_s=started - arrived if arrived is not None else None,
    )
