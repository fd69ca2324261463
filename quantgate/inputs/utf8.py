"""Strings that UTF-8 can write: JSON's `\\ud800` escape, without its pair, reads as a lone
surrogate, which Python keeps in a `str` but no UTF-8 file can hold, so a dataset refuses it
where it is read (file, line and field) rather than where its copy is written."""

from __future__ import annotations

from typing import Any, TypeVar

from evaluators import error_path

_T = TypeVar("_T")


def lone_surrogate(value: Any) -> tuple[tuple[str | int, ...], str] | None:
    """Where a parsed JSON value holds a lone surrogate (`"\\ud800"` without its pair: valid JSON,
    but no text UTF-8 can write): the path of the string (a key's: of its object) and the
    surrogate; None when it holds none."""
    todo: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while todo:
        path, item = todo.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")  # fails on a surrogate alone
            except UnicodeEncodeError as exc:
                return path, item[exc.start]
        elif isinstance(item, dict):
            todo.extend((path, key) for key in item)
            todo.extend(((*path, key), child) for key, child in item.items())
        elif isinstance(item, list | tuple):
            todo.extend(((*path, index), child) for index, child in enumerate(item))
    return None


def utf8_encodable(value: _T) -> _T:
    """A pydantic validator: `value` as it is, or a ValueError saying where its lone surrogate is."""
    found = lone_surrogate(value)
    if found is not None:
        path, surrogate = found
        where = f" at {error_path(path)}" if path else ""
        raise ValueError(
            f"a lone surrogate {surrogate!a}{where}: a \\uD800-\\uDFFF escape without its pair, "
            "not text that UTF-8 can write"
        )
    return value
