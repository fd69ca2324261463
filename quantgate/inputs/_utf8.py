"""Text and UTF-8, where an input is read.

Strings that UTF-8 can write: JSON's `\\ud800` escape, without its pair, reads as a lone
surrogate, which Python keeps in a `str` but no UTF-8 file can hold, so a dataset refuses it
where it is read (file, line and field) rather than where its copy is written.

Bytes that are not UTF-8: a JSON Lines file is decoded line by line (`utf8_lines`), so that a
bad byte is named by its own line and costs that line only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from evaluators import error_path
from quantgate.inputs._problems import Problem

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


def utf8_lines(file: Path, problems: list[Problem]) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a JSON Lines file with their numbers, each decoded on its own: a line
    that is not UTF-8 becomes a problem naming its number, and the lines after it still count
    (decoding the file in blocks named a line before the bad one and lost the rest)."""
    with file.open("rb") as handle:
        for lineno, data in enumerate(_binary_lines(handle), start=1):
            try:
                line = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                where = f"{exc.reason} at byte {exc.start + 1} of the line"
                problems.append(Problem(file=file.name, line=lineno, message=f"not UTF-8: {where}"))
                continue
            if line.strip():
                yield lineno, line


def _binary_lines(handle: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of a binary file as a text file in universal-newline mode splits them (at `\\n`,
    `\\r\\n` or a lone `\\r`, never inside a JSON string), without their ends; an empty line is
    one too."""
    for chunk in handle:  # a binary file's lines end at b"\n" only
        yield from chunk.splitlines() or [b""]
