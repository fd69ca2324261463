"""One load-test request: a prompt streamed through a chat model and timed, never raised.

Shared by the closed levels (`quantgate.loadtest._levels`) and the open-loop Poisson levels
(`quantgate.loadtest._arrivals`). A Poisson request is timed from its scheduled arrival, so the
wait in the client before it could be sent counts in its time to first token, as a user sees it.
"""

from __future__ import annotations

from collections.abc import Callable

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from evaluators.loadtest import INVALID_OUTPUT, LoadRequest
from graphs.streamed import ModelCallError, failure_kind, stream_timed

__all__ = ["CaseCheck", "CaseModel", "Prompt", "stream_request"]

Prompt = tuple[str, list[BaseMessage]]
"""A case id and the messages sent for it."""
CaseModel = Callable[[str], BaseChatModel]
"""A model copy's chat model for a case, by the case's id: constrained to the case's record schema,
its own tools' when it brings them (`quantgate.backends._extraction_context.case_context`)."""
CaseCheck = Callable[[str, str], bool]
"""Whether an answer's text is valid for a case (its id, the text): JSON matching its record schema."""


def stream_request(
    model: CaseModel,
    prompt: Prompt,
    check: CaseCheck,
    *,
    level: str,
    slot: int,
    t0: float,
    arrived: float | None = None,
) -> LoadRequest:
    """Stream one prompt and time it; a failure is recorded with its kind, never raised.

    Args:
        model, prompt, check: The chat model of each case, the case id and messages, whether an
            answer is valid for its case.
        level, slot, t0: Recorded on the request: level name, worker, `perf_counter` at the level's start.
        arrived: The scheduled arrival (`perf_counter` time) of an open-loop request: times are
            measured from it, and the wait until sending is `queued_s`. None: from sending.
    """
    answer = stream_timed(model(prompt[0]), prompt[1])
    origin = answer.started if arrived is None else arrived
    exc = answer.error
    error = (failure_kind(exc), _message(exc)) if exc is not None else None
    tokens = answer.usage.get("output_tokens") or (answer.chunks or None)
    valid = None if error else check(prompt[0], answer.text)
    if error is None and not valid:
        error = (INVALID_OUTPUT, "the answer does not parse as JSON matching the schema")
    return LoadRequest(
        level=level,
        slot=slot,
        case_id=prompt[0],
        started_s=origin - t0,
        ttft_s=answer.ttft_s(origin),
        total_s=answer.total_s(origin),
        output_tokens=tokens if not error or error[0] == INVALID_OUTPUT else None,
        inter_token_s=answer.inter_token_s,
        valid=valid,
        error_kind=error[0] if error else None,
        error=error[1] if error else None,
        queued_s=answer.started - arrived if arrived is not None else None,
    )


def _message(exc: Exception) -> str:
    """A failure's message as recorded: a `ModelCallError` says what happened, any other exception
    is named by its class."""
    return str(exc) if isinstance(exc, ModelCallError) else f"{type(exc).__name__}: {exc}"
