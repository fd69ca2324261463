"""A run on disk: `runs/<run-id>/`, written and read through the typed models.

Records are appended and flushed one line per case as soon as the case finishes, so an
interrupted run keeps everything done so far; readers tolerate a torn last line and can have
it, and any damaged line, reported by line number (`read_lines`' `problems`). JSON files
are replaced atomically. Every file is parsed by its model (`quantgate.rundir.lines`,
`.summary`, `.decision`); a file written by a newer quantgate is refused with a message
naming it and its `format_version`. pandas DataFrames are views built from the records.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

import pandas as pd
from pydantic import BaseModel, ValidationError

from quantgate.rundir.decision import Decision
from quantgate.rundir.files import (
    DECISION_JSON,
    FIDELITY_FILE,
    LOAD_FILE,
    RECORDS_FILE,
    SUMMARY_FILE,
    VARIANTS_FILE,
)
from quantgate.rundir.lines import CaseRecord, FidelityLine, LoadLine
from quantgate.rundir.summary import RunSummary, VariantsFile

ModelT = TypeVar("ModelT", bound=BaseModel)


class RunFileError(ValueError):
    """A run file that cannot be read: missing, not JSON, of an unknown format version, or
    not matching its model. The message names the file (and line)."""


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus a random suffix."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def write_json(path: Path, value: Any) -> None:
    """Write JSON atomically (temporary file, then rename)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(value, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(partial, path)


def write_model(path: Path, value: BaseModel) -> None:
    """Write a run-file model as indented JSON, atomically."""
    write_json(path, value.model_dump(mode="json"))


def _known_version(model: type[BaseModel]) -> int:
    field = model.model_fields.get("format_version")
    return int(field.default) if field is not None else 1


def _validated(model: type[ModelT], value: Any) -> ModelT | str:
    """`value` through its model, or what is wrong with it (its version, the keys that do not match).

    A missing `format_version` is read as 1 (files written before it was added); one of the
    model's `older_format_versions` is read as the current version.
    """
    if isinstance(value, dict):
        version = value.get("format_version", 1)
        known = _known_version(model)
        older: tuple[int, ...] = getattr(model, "older_format_versions", ())
        if version in older:
            value = {**value, "format_version": known}
        elif version != known:
            readable = ", ".join(str(v) for v in sorted({*older, known}))
            return (
                f"format_version {version!r} is not one this quantgate reads ({readable}); "
                "it was written by another version of quantgate"
            )
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()[:5]
        )
        return f"does not match {model.__name__}: {problems}"


def parse_model(model: type[ModelT], value: Any, *, where: str) -> ModelT:
    """Validate one parsed JSON value against its model; errors name `where`.

    A missing `format_version` is read as 1 (files written before it was added); one of the
    model's `older_format_versions` is read as the current version.
    """
    parsed = _validated(model, value)
    if isinstance(parsed, str):
        raise RunFileError(f"{where}: {parsed}")
    return parsed


def read_model(path: Path, model: type[ModelT]) -> ModelT:
    """Read a JSON run file through its model."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunFileError(f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise RunFileError(f"{path}: not JSON ({exc})") from None
    return parse_model(model, value, where=str(path))


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
        return json.loads(raw.decode("utf-8").rstrip("\r\n")), None
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
                parsed = _validated(model, value)
                if not isinstance(parsed, str):
                    yield parsed
                    continue
                problem = LineProblem(file=path.name, line=number, problem=parsed)
            if problems is not None:
                problems.append(problem)
            elif not problem.torn:
                raise RunFileError(f"{path}:{number}: {problem.problem}")


def _drop_torn_tail(path: Path) -> None:
    """Cut a file back to its last newline: an interrupted writer's partial last line would
    otherwise be glued to the next line appended, and both lost."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with path.open("rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return
        handle.seek(0)
        data = handle.read()
        handle.truncate(data.rfind(b"\n") + 1)


class JsonLines:
    """Appends model lines to a JSONL file and flushes each; thread-safe, opened on the first line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._handle: TextIO | None = None

    def append(self, line: BaseModel) -> None:
        """Append one line and flush it to disk."""
        text = line.model_dump_json()
        with self._lock:
            if self._handle is None:
                _drop_torn_tail(self.path)
                self._handle = self.path.open("a", encoding="utf-8")
            self._handle.write(text + "\n")
            self._handle.flush()

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None


class RunStore:
    """Writes one run directory; opening an existing one appends to its records.

    Thread-safe: cases finish on worker threads.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.run_id = directory.name
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / RECORDS_FILE).touch()
        self._records = JsonLines(self.directory / RECORDS_FILE)  # the parent process never writes one

    @classmethod
    def create(cls, root: Path) -> RunStore:
        """A store for a new run under `root`, with a fresh run id."""
        directory = root / new_run_id()
        directory.mkdir(parents=True, exist_ok=False)
        return cls(directory)

    def write_record(self, record: CaseRecord) -> None:
        """Append one record and flush it to disk."""
        self._records.append(record)

    def write_summary(self, summary: RunSummary) -> None:
        """Replace summary.json."""
        write_model(self.directory / SUMMARY_FILE, summary)

    def write_variants(self, variants: VariantsFile) -> None:
        """Replace variants.json."""
        write_model(self.directory / VARIANTS_FILE, variants)

    def close(self) -> None:
        """Close the records file."""
        self._records.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def read_records(run_dir: Path, *, problems: list[LineProblem] | None = None) -> Iterator[CaseRecord]:
    """The records of a run (see `read_lines`: with `problems`, the lines not read are reported
    there; without it, a torn last line left by an interrupted run is skipped and a damaged
    line raises `RunFileError`)."""
    return read_lines(Path(run_dir) / RECORDS_FILE, CaseRecord, problems=problems)


def read_fidelity(run_dir: Path) -> Iterator[FidelityLine]:
    """The token-fidelity lines of a run (none when it measured none)."""
    path = Path(run_dir) / FIDELITY_FILE
    return read_lines(path, FidelityLine) if path.is_file() else iter(())


def read_load(run_dir: Path) -> Iterator[LoadLine]:
    """The load-test requests of a run (none when it ran no load)."""
    path = Path(run_dir) / LOAD_FILE
    return read_lines(path, LoadLine) if path.is_file() else iter(())


def read_summary(run_dir: Path) -> RunSummary:
    """summary.json of a run."""
    return read_model(Path(run_dir) / SUMMARY_FILE, RunSummary)


def read_decision(run_dir: Path) -> Decision:
    """decision.json of a run."""
    return read_model(Path(run_dir) / DECISION_JSON, Decision)


def latest_records(records: Iterable[CaseRecord]) -> dict[str, dict[str, CaseRecord]]:
    """Records by variant and case id; a later record of the same case replaces an earlier one."""
    found: dict[str, dict[str, CaseRecord]] = defaultdict(dict)
    for record in records:
        found[record.variant][record.case_id] = record
    return dict(found)


@dataclass(frozen=True, kw_only=True)
class Run:
    """A run loaded from disk."""

    directory: Path
    summary: RunSummary
    variants: VariantsFile

    def records(self, *, problems: list[LineProblem] | None = None) -> Iterator[CaseRecord]:
        """Stream the records (one per case x variant); `problems` as for `read_records`."""
        return read_records(self.directory, problems=problems)

    def to_frame(self) -> pd.DataFrame:
        """All records as a DataFrame; per-field scores become `field:<name>` columns."""
        return records_frame(self.records())


_NESTED = {"fields", "outcomes", "agreement_fields", "attempt_timings"}


def records_frame(records: Iterable[CaseRecord]) -> pd.DataFrame:
    """A DataFrame view of records, one row per case x variant (no record: no row, the columns kept)."""
    rows = []
    for record in records:
        row = record.model_dump(exclude=_NESTED)
        row.update({f"field:{name}": score for name, score in record.fields.items()})
        rows.append(row)
    if not rows:
        return pd.DataFrame(columns=[name for name in CaseRecord.model_fields if name not in _NESTED])
    return pd.DataFrame(rows)


def load_run(run_dir: str | Path) -> Run:
    """Open a run directory written by `quantgate run` or `quantgate load`.

    Raises:
        RunFileError: summary.json or variants.json is missing, unreadable or of another version.
    """
    directory = Path(run_dir)
    variants_path = directory / VARIANTS_FILE
    variants = read_model(variants_path, VariantsFile) if variants_path.is_file() else VariantsFile()
    return Run(directory=directory, summary=read_summary(directory), variants=variants)
