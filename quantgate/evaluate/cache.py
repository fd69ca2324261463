"""The reference cache: a reference's answers kept across runs, so one more quantization costs
only that variant.

A run whose reference is a model file keeps every case the reference answered in the cache
under a key made of everything that decides the answer: the model file's sha256, the dataset's
content (its sha256), the prompt prefix (instructions and few-shot examples, as the model reads
them), the decoding settings (the variant's backend, options and KV-cache type when set, slots,
repairs), the quantgate and llama-cpp-python versions, and the machine's CPU (outputs differ
between instruction sets). A later run with the same key takes the reference's record of a case
from the cache instead of evaluating it: the record is copied into the new run's records.jsonl,
rescored with today's scorer and marked `cached_from` (the run that evaluated it). A changed
input changes the key, so it never hits; `--no-cache` (a `RunOptions.reference_cache` of None)
turns the cache off.

    <cache>/<key>/key.json        what the key was made of
    <cache>/<key>/records.jsonl   the reference's records, one per case (CaseRecord)
    <cache>/<key>/entry.json      the reference's last summary entry (its memory and load figures)

The cached timings were measured by an earlier run on the same kind of machine; the summary
counts the cached cases of the reference (`cached_cases`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import ValidationError

from evaluators import CaseScorer
from graphs.evaluation import retained, score_case
from graphs.outcomes import keeps_values
from graphs.prompting import build_messages
from quantgate.backends import capabilities
from quantgate.evaluate.options import case_input, variant_concurrency
from quantgate.evaluate.rescore import extraction_of
from quantgate.evaluate.session import RunSession
from quantgate.evaluate.tracks import Track
from quantgate.hardware import hardware, package_version
from quantgate.inputs.file_hashes import file_sha256
from quantgate.inputs.variants import Variant
from quantgate.rundir.build import case_record
from quantgate.rundir.jsonl import read_lines
from quantgate.rundir.lines import CaseRecord
from quantgate.rundir.store import RunStore
from quantgate.rundir.summary import VariantEntry

__all__ = ["REFERENCE_CACHE_ENV", "ReferenceCache", "cache_key", "default_reference_cache", "key_inputs"]

_RECORDS = "records.jsonl"
_ENTRY = "entry.json"
_KEY = "key.json"


REFERENCE_CACHE_ENV = "QUANTGATE_REFERENCE_CACHE"
"""Environment variable: the reference cache's directory, instead of the user cache directory's."""


def default_reference_cache() -> Path:
    """Where the CLI keeps reference answers: `$QUANTGATE_REFERENCE_CACHE`, else the user cache
    directory's `quantgate/reference-cache`."""
    override = os.environ.get(REFERENCE_CACHE_ENV)
    return Path(override) if override else platformdirs.user_cache_path("quantgate") / "reference-cache"


def _model_sha256(variant: Variant) -> str | None:
    if variant.sha256:
        return variant.sha256
    if capabilities(variant).model_file and Path(variant.model).is_file():
        return file_sha256(Path(variant.model))
    return None


def key_inputs(session: RunSession) -> dict[str, Any] | None:
    """What decides the reference's answers in this run; None when its model is not a file."""
    variant = next(v for v in session.variants if v.name == session.reference)
    sha256 = _model_sha256(variant)
    if sha256 is None:
        return None
    dataset, options = session.dataset, session.options
    prefix = build_messages(
        schema=dataset.schema,
        examples=[(e.text, e.expected) for e in dataset.examples if e.expected is not None],
        text="",
        task=dataset.task,
    )[:-1]
    machine = hardware()
    return {
        "model_sha256": sha256,
        "backend": variant.backend,
        "options": variant.options,
        "slots": variant_concurrency(options, variant),
        "max_repairs": options.max_repairs,
        "dataset_sha256": dataset.sha256,
        "prompt_prefix_sha256": hashlib.sha256(
            json.dumps([[m.type, m.content] for m in prefix], ensure_ascii=False).encode()
        ).hexdigest(),
        "quantgate": package_version("quantgate"),
        "llama_cpp_python": package_version("llama-cpp-python"),
        "cpu_model": machine.get("cpu_model"),
        "machine": machine.get("machine"),
        **({"kv_cache": variant.kv_cache.model_dump()} if variant.kv_cache is not None else {}),
    }


def cache_key(inputs: dict[str, Any]) -> str:
    """The cache directory's name for these key inputs."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:32]


class ReferenceCache:
    """The reference's cached answers for a run (or nothing, when caching is off or impossible).

    Args:
        directory: This key's directory; None: no cache.
        run_id: The run writing to it.
    """

    def __init__(self, directory: Path | None, run_id: str) -> None:
        self.directory = directory
        self.run_id = run_id
        self.records: dict[str, CaseRecord] = {}
        self.entry: VariantEntry | None = None
        if directory is not None:
            self.records = _read_records(directory / _RECORDS)
            self.entry = _read_entry(directory / _ENTRY)

    @classmethod
    def for_session(cls, session: RunSession) -> ReferenceCache:
        """The cache of the session's reference, under `options.reference_cache`."""
        root = session.options.reference_cache
        inputs = key_inputs(session) if root is not None else None
        if root is None or inputs is None:
            return cls(None, session.store.run_id)
        directory = root / cache_key(inputs)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            key_file = directory / _KEY
            if not key_file.exists():
                key_file.write_text(json.dumps(inputs, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"quantgate: warning: the reference cache {root} cannot be written ({exc}); not used",
                  file=sys.stderr)  # fmt: skip
            return cls(None, session.store.run_id)
        return cls(directory, session.store.run_id)

    def serve(self, track: Track, case_ids: list[str], store: RunStore) -> None:
        """Give the reference's track the cached answers of these cases it lacks, each copied into
        the run's records through `store` (rescored, marked with the run that evaluated it)."""
        found = [c for c in track.lacking(case_ids) if c in self.records]
        if not found:
            return
        if track.cached_entry is None:
            track.cached_entry = self.entry
        by_id = {case.id: case for case in track.job.cases}
        scorer = CaseScorer(schema=track.job.dataset.schema, task=track.job.dataset.task)
        for case_id in found:
            record = self.records[case_id]
            outcome = score_case(
                case_input(by_id[case_id]), extraction_of(record), scorer=scorer, reference_records=None
            )
            origin = record.cached_from or self.run_id
            store.write_record(case_record(track.name, outcome).model_copy(update={"cached_from": origin}))
            values = keeps_values(scorer.task)  # as a case the reference runs keeps them
            track.outcomes[case_id] = retained(outcome, keep_record=True, keep_values=values)
            track.cached.add(case_id)

    def keep(self, track: Track) -> None:
        """Add the records of the cases the reference evaluated in this run to the cache."""
        if self.directory is None:
            return
        fresh = [c for c in track.outcomes if c not in self.records and c not in track.cached]
        if not fresh:
            return
        lines = []
        for record in _latest(track, fresh):
            kept = record.model_copy(update={"cached_from": self.run_id})
            self.records[record.case_id] = kept
            lines.append(kept.model_dump_json())
        _append(self.directory / _RECORDS, lines)

    def keep_entry(self, entry: VariantEntry) -> None:
        """Keep the reference's entry (its memory and load figures) when it loaded in this run."""
        if self.directory is None or not entry.loads:
            return
        with contextlib.suppress(OSError):
            (self.directory / _ENTRY).write_text(entry.model_dump_json(indent=1), encoding="utf-8")


def _latest(track: Track, case_ids: list[str]) -> list[CaseRecord]:
    """The track's latest records of these cases, read from its run's records.jsonl."""
    wanted = set(case_ids)
    found: dict[str, CaseRecord] = {}
    for record in read_lines(track.job.run_dir / _RECORDS, CaseRecord, problems=[]):
        if record.variant == track.name and record.case_id in wanted:
            found[record.case_id] = record
    return [found[c] for c in case_ids if c in found]


def _append(path: Path, lines: list[str]) -> None:
    """Append whole lines under a lock (two runs may share a cache key)."""
    try:
        with path.open("a", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            handle.write("".join(line + "\n" for line in lines))
            handle.flush()
    except OSError as exc:
        print(f"quantgate: warning: {path} could not be written ({exc})", file=sys.stderr)


def _read_records(path: Path) -> dict[str, CaseRecord]:
    if not path.is_file():
        return {}
    found: dict[str, CaseRecord] = {}
    for record in read_lines(path, CaseRecord, problems=[]):  # a damaged line is one case less
        found.setdefault(record.case_id, record)
    return found


def _read_entry(path: Path) -> VariantEntry | None:
    try:
        return VariantEntry.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None
