"""JSONL run files (records.jsonl, fidelity.jsonl, load.jsonl): one model per line, appended.

Lines are appended and flushed one at a time, so an interrupted writer keeps every line it
finished. Readers tolerate a torn last line (a write cut off) and can have it, and any damaged
line, reported by line number (`read_lines`' `problems`); a resumed run sets a torn last line
aside (`set_aside_torn_tail`) before it appends again.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel

from evaluators import loads_json
from quantgate.rundir._jsonfile import ModelT, RunFileError, RunWriteError, validated


@dataclass(frozen=True, kw_only=True)
class LineProblem:
    """A line of a JSONL run file that was not read.

    Attributes:
        file: The file's name (`records.jsonl`).
        line: The line's number, from 1.
        problem: What is wrong with it.
        torn: It is the last line, cut short: a write the run did not finish (it was
            interrupted, or is still writing).
    """

    file: str
    line: int
    problem: str
    torn: bool = False

    def __str__(self) -> str:
        return f"{self.file} line {self.line}: {self.problem}"


_TORN = "the last line is cut short (a write the run did not finish); not read"


def _line_problem(path: Path, number: int, raw: bytes) -> tuple[Any, LineProblem | None]:
    """A line's JSON value, or why it is not one (a torn last line: no newline at its end)."""
    torn = not raw.endswith(b"\n")
    try:
        return loads_json(raw.decode("utf-8").rstrip("\r\n")), None
    except UnicodeDecodeError as exc:
        problem = f"not UTF-8 text ({exc})"
    except json.JSONDecodeError as exc:
        problem = f"not JSON ({exc})"
    return None, LineProblem(file=path.name, line=number, problem=_TORN if torn else problem, torn=torn)


def read_lines(
    path: Path, model: type[ModelT], *, problems: list[LineProblem] | None = None
) -> Iterator[ModelT]:
    """The lines of a JSONL run file, each through its model.

    A last line without its newline that does not parse is a write the run did not finish (it
    was interrupted): it is tolerated, never read. Any other line that does not parse, or does
    not match the model, is damage, so that a damaged file is never judged on fewer cases
    without a word.

    Args:
        path: The file.
        model: The model of one line.
        problems: Where the lines not read are reported: given, each such line (the torn last
            one too) is appended to it, in file order, and skipped. Without it, a damaged
            line raises and a torn last line is skipped.

    Raises:
        RunFileError: Without `problems`: a complete line is not JSON, or does not match the model.
    """
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            value, problem = _line_problem(path, number, raw)
            if problem is None:
                parsed = validated(model, value)
                if not isinstance(parsed, str):
                    yield parsed
                    continue
                problem = LineProblem(file=path.name, line=number, problem=parsed)
            if problems is not None:
                problems.append(problem)
            elif not problem.torn:
                raise RunFileError(f"{path}:{number}: {problem.problem}")


TORN_SUFFIX = ".torn"
"""Appended to a JSONL file's name for the file its torn last lines are set aside in."""


def _cut_torn_tail(path: Path, aside: Path | None) -> int:
    """Cut a file back to its last newline, appending the bytes after it (a write that was cut
    off) and a newline to `aside` when given; how many bytes were cut."""
    if not path.is_file() or path.stat().st_size == 0:
        return 0
    with path.open("rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return 0
        handle.seek(0)
        data = handle.read()
        end = data.rfind(b"\n") + 1
        if aside is not None:
            with aside.open("ab") as kept:
                kept.write(data[end:] + b"\n")
                kept.flush()
                os.fsync(kept.fileno())
        handle.truncate(end)
    return len(data) - end


def set_aside_torn_tail(path: Path) -> int:
    """Move a file's torn last line (bytes after its last newline: a write that was cut off) to
    `<path>.torn`, appended there, and cut the file back to its last newline.

    Returns:
        How many bytes were set aside (0: the file ends with a newline, is empty or missing).
    """
    return _cut_torn_tail(path, path.with_name(path.name + TORN_SUFFIX))


def _drop_torn_tail(path: Path) -> None:
    """Cut a file back to its last newline: an interrupted writer's partial last line would
    otherwise be glued to the next line appended, and both lost."""
    _cut_torn_tail(path, None)


class JsonLines:
    """Appends model lines to a JSONL file and flushes each; thread-safe, opened on the first line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._handle: TextIO | None = None

    def append(self, line: BaseModel) -> None:
        """Append one line and flush it to disk.

        Raises:
            RunWriteError: It could not be written (a disk full, ...): the complete lines before
                it stay, and the next append first cuts off what part of it reached the file.
        """
        text = line.model_dump_json()
        with self._lock:
            try:
                if self._handle is None:
                    _drop_torn_tail(self.path)
                    self._handle = self.path.open("a", encoding="utf-8")
                self._handle.write(text + "\n")
                self._handle.flush()
            except OSError as exc:
                self._discard()
                raise RunWriteError(self.path, exc) from exc

    def _discard(self) -> None:
        """Drop the handle after a failed write, and what it could not write."""
        handle, self._handle = self._handle, None
        if handle is not None:
            with contextlib.suppress(OSError):  # closing flushes: it fails again
                handle.close()

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None
