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

Each record line and entry.json is sealed: `{"sha256": ..., "content": ...}`, the sha256 of the
content (its JSON, keys sorted). A record whose content no longer matches (edited or damaged since
a run kept it) is a miss: the case is evaluated again, with a warning; an entry.json that no
longer matches makes the whole key a miss. The checksum catches edits, not forgery (anyone who
can write the cache can compute one). The key holds the layout's version (`CACHE_FORMAT`), so
entries kept before checksums, which cannot be checked, are never read.

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
from typing import Any, TypeVar

import platformdirs
from pydantic import BaseModel, ConfigDict, ValidationError

from graphs.evaluation import retained, score_case
from graphs.outcomes import keeps_values
from graphs.prompting import build_messages
from quantgate._hardware import hardware, package_version
from quantgate.backends import capabilities
from quantgate.backends._extraction_context import case_input, prompt_examples
from quantgate.evaluate._options import variant_concurrency
from quantgate.evaluate._rescore import extraction_of
from quantgate.evaluate._session import RunSession
from quantgate.evaluate.scheduler._tracks import Track
from quantgate.inputs._file_hashes import file_sha256
from quantgate.inputs._variants import Variant
from quantgate.rundir._build import case_record
from quantgate.rundir._jsonl import read_lines
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._store import RunStore
from quantgate.rundir._summary import VariantEntry

__all__ = [
    "CACHE_FORMAT",
    "REFERENCE_CACHE_ENV",
    "ReferenceCache",
    "cache_key",
    "default_reference_cache",
    "key_inputs",
]

_RECORDS = "records.jsonl"
_ENTRY = "entry.json"
_KEY = "key.json"

CACHE_FORMAT = 2
"""The layout of a key's files, part of the key: 2, record lines and entry.json sealed with their
sha256; 1 (no `cache_format` in the key), written before checksums, is never read."""


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
        examples=prompt_examples(dataset),
        text="",
        task=dataset.task,
    )[:-1]
    machine = hardware()
    # a served model is named, not a file: the name picks the weights on that server
    served = {} if capabilities(variant).model_file else {"model": variant.model}
    return {
        "cache_format": CACHE_FORMAT,
        "model_sha256": sha256,
        **served,
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
            entry, edited = _read_entry(directory / _ENTRY)
            if edited:  # its figures were changed: the reference is loaded and measured again
                _warn(directory / _ENTRY, "does not match its checksum; the whole entry is not used")
                return
            self.records, self.entry = _read_records(directory / _RECORDS), entry

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
        scorer = track.job.dataset.scorer()
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
            lines.append(_seal(kept))
        _append(self.directory / _RECORDS, lines)

    def keep_entry(self, entry: VariantEntry) -> None:
        """Keep the reference's entry (its memory and load figures) when it loaded in this run."""
        if self.directory is None or not entry.loads:
            return
        with contextlib.suppress(OSError):
            (self.directory / _ENTRY).write_text(_seal(entry) + "\n", encoding="utf-8")


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


def _warn(path: Path, what: str) -> None:
    print(f"quantgate: warning: the reference cache's {path} {what}", file=sys.stderr)


_M = TypeVar("_M", bound=BaseModel)


class _Sealed(BaseModel):
    """A record line or entry.json of the cache: the content and its checksum (`_checksum`)."""

    model_config = ConfigDict(extra="forbid")

    sha256: str
    content: dict[str, Any]

    def unsealed(self, model: type[_M]) -> _M | None:
        """The content through its model; None when it does not match its checksum or the model."""
        if self.sha256 != _checksum(self.content):
            return None
        try:
            return model.model_validate(self.content)
        except ValidationError:
            return None


def _checksum(content: dict[str, Any]) -> str:
    """The sha256 of a JSON object, written with its keys sorted (the same whatever their order)."""
    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _seal(model: BaseModel) -> str:
    """The JSON of a sealed `model`, on one line."""
    content = json.loads(model.model_dump_json())
    return _Sealed(sha256=_checksum(content), content=content).model_dump_json()


def _read_records(path: Path) -> dict[str, CaseRecord]:
    """The cached records by case; a line that does not match its checksum is a miss (its case
    evaluated again), said once for the cases no later line of which does match."""
    if not path.is_file():
        return {}
    found: dict[str, CaseRecord] = {}
    edited: set[str] = set()
    for line in read_lines(path, _Sealed, problems=[]):  # a damaged line is one case less
        record = line.unsealed(CaseRecord)
        if record is None:
            edited.add(str(line.content.get("case_id")))
        else:
            found.setdefault(record.case_id, record)
    edited -= set(found)  # evaluated again since, and kept
    if edited:
        cases = ", ".join(sorted(edited)[:5]) + (", ..." if len(edited) > 5 else "")
        _warn(path, f"has {len(edited)} record(s) that do not match their checksum (cases {cases}): "
              "edited or damaged since a run kept them; those cases are evaluated again")  # fmt: skip
    return found


def _read_entry(path: Path) -> tuple[VariantEntry | None, bool]:
    """The cached entry (None when there is none), and whether entry.json does not match its checksum."""
    try:
        sealed = _Sealed.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None, False
    entry = sealed.unsealed(VariantEntry)
    return entry, entry is None
