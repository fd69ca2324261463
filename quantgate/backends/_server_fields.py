"""What a server's answers may put into a run's files: parsed, typed, bounded fields, never a body.

A variants file names the server a variant talks to (an Ollama `host`, an `openai` `base_url`),
and that address may be any HTTP service the machine reaches, loopback ones included. So what a
backend records of a server's answers (`variants.json`'s `runtime`, the variant's error in
`summary.json`, a case's error in `records.jsonl`, the decision) is only what parses as the field
it should be: a number, or a short string without control characters (a version, a model name, a
digest, an error message from the API's JSON). A body that does not parse is described by its
kind and size (`body_note`), never quoted.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MAX_FIELD_CHARS", "body_note", "count", "described", "error_message", "refusal", "short_text"]

MAX_FIELD_CHARS = 200
"""The longest string field kept of a server's answer (a model id, a version, a file path)."""

MAX_MESSAGE_CHARS = 300
"""The longest error message kept of a server's JSON error body."""

_MEDIA_TYPE = re.compile(r"[A-Za-z0-9!#$&^_.+-]{1,64}/[A-Za-z0-9!#$&^_.+-]{1,64}")


def short_text(
    value: object, *, limit: int = MAX_FIELD_CHARS, pattern: re.Pattern[str] | None = None
) -> str | None:
    """A string field of a server's JSON as a run records it; None when it is not one.

    Args:
        value: The field's value as parsed.
        limit: The longest string kept.
        pattern: A pattern the whole string must match (a version, a digest), if any.

    Returns:
        `value` when it is a non-empty string of at most `limit` characters, none of them a
        control character (ESC, a line break, a bidi control), matching `pattern`; else None.
    """
    if not isinstance(value, str) or not value or len(value) > limit or not value.isprintable():
        return None
    if pattern is not None and not pattern.fullmatch(value):
        return None
    return value


def count(value: object) -> int | None:
    """A count or a size in a server's JSON (a non-negative integer, not a boolean); else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def error_message(body: object) -> str | None:
    """The message of an API's JSON error body: `error.message`, `error` or `detail` when it is a
    string (OpenAI's, Ollama's and FastAPI's forms), its white space collapsed, its control
    characters dropped, cut to `MAX_MESSAGE_CHARS`; None when the body has no such message."""
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    if not isinstance(message, str):
        message = body.get("detail")
    if not isinstance(message, str):
        return None
    text = "".join(c for c in " ".join(message.split()) if c.isprintable())
    return (text[:MAX_MESSAGE_CHARS] + "…" if len(text) > MAX_MESSAGE_CHARS else text) or None


def body_note(content_type: str | None, size: int) -> str:
    """What a body that did not parse was, without any of it: an HTML page, or a body of a media
    type (only a well-formed one is named), and its size."""
    media = (content_type or "").split(";")[0].strip().lower()
    if "html" in media:
        return f"an HTML page ({size} bytes)"
    if _MEDIA_TYPE.fullmatch(media):
        return f"a body of type {media} ({size} bytes)"
    return f"a body with no valid content type ({size} bytes)"


def refusal(response: Any) -> str:
    """What a failed answer said, as a run may record it: its JSON error message, else a note of
    what its body was (`body_note`). `response` is an httpx (or httpx-compatible) response."""
    try:
        message = error_message(response.json())
    except ValueError:
        message = None
    return message if message is not None else described(response)


def described(response: Any) -> str:
    """`body_note` of an httpx (or httpx-compatible) response."""
    return body_note(response.headers.get("content-type"), len(response.content))
