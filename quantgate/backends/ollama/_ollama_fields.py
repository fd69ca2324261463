"""What a run records of an Ollama server's answers about a model: typed, bounded fields only.

`/api/show` gives the model's `details` (format, family, parameter size, quantization level),
its Modelfile `parameters` (text, one `name value` a line) and its `capabilities`; `/api/ps` gives
the loaded model's size in memory and in VRAM, its context length and when it will be unloaded.
A variant's `host` may name any service the machine reaches, so each field is kept only when it
parses as what it should be (`quantgate.backends._server_fields`); the rest of an answer is not
recorded.
"""

from __future__ import annotations

import re
from typing import Any

from quantgate.backends._server_fields import count, short_text

__all__ = ["digest_field", "running_fields", "shown_fields", "version_field"]

_DETAILS = ("format", "family", "parameter_size", "quantization_level", "parent_model")
_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_PARAMETER = re.compile(r"([a-z][a-z0-9_]{0,39})\s+(\S.*)")
_TIME = re.compile(r"[0-9T:.+Z-]{1,40}")
_DIGEST = re.compile(r"(sha256:)?[0-9a-f]{64}")
_VERSION = re.compile(r"[0-9A-Za-z.+_-]{1,64}")
MAX_PARAMETERS = 64
"""The most Modelfile parameter lines recorded."""


def version_field(value: object) -> str | None:
    """`/api/version`'s `version` (such as `0.12.6`); None when it is not a version string."""
    return short_text(value, pattern=_VERSION)


def digest_field(value: object) -> str | None:
    """A model's digest (`/api/tags`, `/api/ps`): 64 hex digits; None when it is not one."""
    return short_text(value, pattern=_DIGEST)


def _names(value: object) -> list[str] | None:
    """A list of short lower-case names (families, capabilities); None when it is not a list."""
    if not isinstance(value, list):
        return None
    return [name for name in (short_text(v, limit=40, pattern=_NAME) for v in value) if name is not None]


def _parameters(value: object) -> str | None:
    """The Modelfile parameters, one `name value` a line, each line that parses so (at most
    `MAX_PARAMETERS`, each at most 200 characters without control characters); None when none does."""
    if not isinstance(value, str):
        return None
    kept = [line.strip() for line in value.splitlines() if short_text(line.strip(), pattern=_PARAMETER)]
    return "\n".join(kept[:MAX_PARAMETERS]) or None


def shown_fields(show: dict[str, Any]) -> dict[str, Any]:
    """What is kept of `/api/show`: `details` (its known keys, short strings, and `families`),
    `parameters` (see `_parameters`) and `capabilities` (a list of names, or None)."""
    raw = show.get("details")
    details = raw if isinstance(raw, dict) else {}
    kept: dict[str, Any] = {
        key: short_text(details.get(key), limit=100) for key in _DETAILS if key in details
    }
    if "families" in details:
        kept["families"] = _names(details["families"])
    return {
        "details": kept,
        "parameters": _parameters(show.get("parameters")),
        "capabilities": _names(show.get("capabilities")),
    }


def running_fields(entry: dict[str, Any]) -> dict[str, Any]:
    """What is kept of a model's `/api/ps` entry: its name and model, `size`, `size_vram` and
    `context_length` (counts), `expires_at` (a time stamp) and `digest`; each None when it is not
    of its type."""
    return {
        "name": short_text(entry.get("name")),
        "model": short_text(entry.get("model")),
        "size": count(entry.get("size")),
        "size_vram": count(entry.get("size_vram")),
        "context_length": count(entry.get("context_length")),
        "expires_at": short_text(entry.get("expires_at"), pattern=_TIME),
        "digest": digest_field(entry.get("digest")),
    }
