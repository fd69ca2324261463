"""A run on disk: `runs/<run-id>/` with records.jsonl, variants.json, summary.json and
`dataset/` (a copy of the cases evaluated, so the run can be judged without its source).

Records are appended and flushed one line per case as soon as the case finishes, so an
interrupted run keeps everything done so far; readers skip a torn last line. JSON files
are replaced atomically. pandas DataFrames are views built from the records.
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
from typing import Any, TextIO

import pandas as pd

from graphs.evaluation import CaseOutcome

RUN_FORMAT_VERSION = 1
RECORDS_FILE = "records.jsonl"
SUMMARY_FILE = "summary.json"
VARIANTS_FILE = "variants.json"
DATASET_DIR = "dataset"


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus a random suffix."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def write_json(path: Path, value: Any) -> None:
    """Write JSON atomically (temporary file, then rename)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(value, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(partial, path)


def case_record(variant: str, outcome: CaseOutcome) -> dict[str, Any]:
    """One line of records.jsonl: raw output, record, per-field scores, timings, tokens, error."""
    result, score, latency = outcome.extraction, outcome.score, outcome.latency
    fields = score.fields.fields if score.fields else {}
    return {
        "format_version": RUN_FORMAT_VERSION,
        "variant": variant,
        "case_id": outcome.case_id,
        "tags": list(score.tags),
        "raw": result.raw,
        "record": result.record,
        "valid": result.valid,
        "format_valid": score.format.valid if score.format else None,
        "attempts": len(result.attempts),
        "validation_errors": result.validation_errors,
        "error": result.error,
        "error_kind": outcome.error_kind,
        "truncated": result.truncated,
        "input_tokens_dropped": result.input_tokens_dropped,
        "field_accuracy": score.fields.score if score.fields else None,
        "fields": {name: f.score for name, f in fields.items()},
        "outcomes": {name: f.outcome for name, f in fields.items()},
        "agreement": outcome.agreement.score if outcome.agreement else None,
        "agreement_fields": {n: f.score for n, f in outcome.agreement.fields.items()}
        if outcome.agreement
        else None,
        "ttft_s": latency.ttft_s,
        "total_s": latency.total_s,
        "input_tokens": latency.input_tokens,
        "output_tokens": latency.output_tokens,
        "prompt_tokens_per_s": latency.prompt_tokens_per_s,
        "generation_tokens_per_s": latency.generation_tokens_per_s,
        "attempt_timings": list(result.attempts),
    }


class RunStore:
    """Writes one run directory; opening an existing one appends to its records.

    Thread-safe: cases finish on worker threads.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.run_id = directory.name
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        (self.directory / RECORDS_FILE).touch()
        self._records: TextIO | None = None  # opened on the first record: the parent never writes one

    @classmethod
    def create(cls, root: Path) -> RunStore:
        """A store for a new run under `root`, with a fresh run id."""
        directory = root / new_run_id()
        directory.mkdir(parents=True, exist_ok=False)
        return cls(directory)

    def write_record(self, record: dict[str, Any]) -> None:
        """Append one record and flush it to disk."""
        line = json.dumps(record, ensure_ascii=False, default=str)
        with self._lock:
            if self._records is None:
                self._records = (self.directory / RECORDS_FILE).open("a", encoding="utf-8")
            self._records.write(line + "\n")
            self._records.flush()

    def write_summary(self, summary: dict[str, Any]) -> None:
        """Replace summary.json."""
        write_json(self.directory / SUMMARY_FILE, summary)

    def write_variants(self, variants: list[dict[str, Any]]) -> None:
        """Replace variants.json."""
        write_json(
            self.directory / VARIANTS_FILE, {"format_version": RUN_FORMAT_VERSION, "variants": variants}
        )

    def close(self) -> None:
        """Close the records file."""
        if self._records is not None:
            self._records.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def read_records(run_dir: Path) -> Iterator[dict[str, Any]]:
    """The records of a run, skipping a torn last line left by an interrupted run."""
    path = Path(run_dir) / RECORDS_FILE
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def latest_records(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Records by variant and case id; a later record of the same case replaces an earlier one."""
    found: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for record in records:
        found[record["variant"]][record["case_id"]] = record
    return dict(found)


@dataclass(frozen=True, kw_only=True)
class Run:
    """A run loaded from disk."""

    directory: Path
    summary: dict[str, Any]
    variants: list[dict[str, Any]]

    def records(self) -> Iterator[dict[str, Any]]:
        """Stream the records (one per case x variant)."""
        return read_records(self.directory)

    def to_frame(self) -> pd.DataFrame:
        """All records as a DataFrame; per-field scores become `field:<name>` columns."""
        return records_frame(self.records())


def records_frame(records: Iterator[dict[str, Any]]) -> pd.DataFrame:
    """A DataFrame view of records, one row per case x variant."""
    rows = []
    for record in records:
        row = {
            k: v
            for k, v in record.items()
            if k not in ("fields", "outcomes", "agreement_fields", "attempt_timings")
        }
        row.update({f"field:{name}": score for name, score in (record.get("fields") or {}).items()})
        rows.append(row)
    return pd.DataFrame(rows)


def load_run(run_dir: str | Path) -> Run:
    """Open a run directory written by `quantgate run`."""
    directory = Path(run_dir)
    summary = json.loads((directory / SUMMARY_FILE).read_text(encoding="utf-8"))
    variants_path = directory / VARIANTS_FILE
    variants = (
        json.loads(variants_path.read_text(encoding="utf-8"))["variants"] if variants_path.is_file() else []
    )
    return Run(directory=directory, summary=summary, variants=variants)
