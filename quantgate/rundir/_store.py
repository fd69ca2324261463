"""A run on disk: `runs/<run-id>/`, written and read through the typed models.

Records are appended and flushed one line per case as soon as the case finishes, so an
interrupted run keeps everything done so far (`quantgate.rundir._jsonl`: torn and damaged
lines). JSON files are replaced atomically and parsed by their models
(`quantgate.rundir._jsonfile`). pandas DataFrames are views built from the records
(`quantgate.rundir._frames`).
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import secrets
import shutil
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evaluators.errors import QuantgateError
from quantgate.rundir._decision import Decision
from quantgate.rundir._files import (
    DECISION_JSON,
    FIDELITY_FILE,
    LOAD_FILE,
    RECORDS_FILE,
    SUMMARY_FILE,
    VARIANTS_FILE,
)
from quantgate.rundir._jsonfile import RunFileError, parse_model, read_model, write_json, write_model
from quantgate.rundir._jsonl import JsonLines, LineProblem, read_lines, set_aside_torn_tail
from quantgate.rundir._lines import CaseRecord, FidelityLine, LoadLine
from quantgate.rundir._summary import RunSummary, VariantsFile

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "JsonLines",
    "LineProblem",
    "Run",
    "RunBusyError",
    "RunFileError",
    "RunStore",
    "latest_records",
    "load_run",
    "new_run_id",
    "parse_model",
    "read_decision",
    "read_fidelity",
    "read_lines",
    "read_load",
    "read_model",
    "read_records",
    "read_summary",
    "set_aside_torn_tail",
    "write_json",
    "write_model",
]


class RunBusyError(QuantgateError, RuntimeError):
    """A run directory another live process is writing (its lock is held)."""


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus a random suffix."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


class RunStore:
    """Writes one run directory; opening an existing one appends to its records.

    Thread-safe: cases finish on worker threads. The process that runs the run (`create`,
    `resume`) holds an exclusive lock on the directory until `close`, so a second quantgate
    cannot resume a run that is still being written; the kernel releases the lock when the
    process ends, even by `kill -9`. A worker process writing the records opens the store
    without it.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.run_id = directory.name
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / RECORDS_FILE).touch()
        self._records = JsonLines(self.directory / RECORDS_FILE)  # the parent process never writes one
        self._lock: int | None = None

    @classmethod
    def create(cls, root: Path, name: str | None = None) -> RunStore:
        """A store for a new run under `root`, with a fresh run id (or `name`, a suite's task), locked
        by this process.

        Raises:
            OSError: The directory could not be made (a full disk): none is left.
        """
        directory = root / (name or new_run_id())
        directory.mkdir(parents=True, exist_ok=False)
        try:
            store = cls(directory)
            store._take_lock()
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return store

    @classmethod
    def resume(cls, directory: Path) -> RunStore:
        """The store of an existing run directory, locked by this process, to go on writing it.

        Raises:
            RunBusyError: Another live process holds the run's lock (it is still running).
        """
        store = cls(directory)
        try:
            store._take_lock()
        except BlockingIOError:
            store.close()
            raise RunBusyError(
                f"{directory}: another quantgate process is still writing this run; wait for it to end, "
                "or stop it (Ctrl-C, or kill), then resume"
            ) from None
        return store

    def _take_lock(self) -> None:
        descriptor = os.open(self.directory, os.O_RDONLY)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BaseException:
            os.close(descriptor)
            raise
        self._lock = descriptor

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
        """Close the records file and release the run's lock."""
        self._records.close()
        if self._lock is not None:
            os.close(self._lock)  # releases the flock
            self._lock = None

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
        from quantgate.rundir._frames import records_frame  # pandas only for this view

        return records_frame(self.records())


def load_run(run_dir: str | Path) -> Run:
    """Open a run directory written by `quantgate run` or `quantgate load`.

    Raises:
        RunFileError: summary.json or variants.json is missing, unreadable or of another version.
    """
    directory = Path(run_dir)
    variants_path = directory / VARIANTS_FILE
    variants = read_model(variants_path, VariantsFile) if variants_path.is_file() else VariantsFile()
    return Run(directory=directory, summary=read_summary(directory), variants=variants)
