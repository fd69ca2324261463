"""What a resumed run goes on with, read from its directory and checked against what is given
again: the run's copy of its dataset (as the run wrote it, and the dataset given again the one the
run read) and its variants (those given again the same, a model file perhaps moved). The rest of
the run is read back by `quantgate.evaluate._resume`, which callers import `ResumeError` from too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evaluators import loads_json
from evaluators.errors import UsageError
from quantgate.backends import capabilities
from quantgate.inputs._dataset import Dataset, DatasetError, data_file_hashes, load_dataset
from quantgate.inputs._variants import Variant, VariantSet, VariantSpec
from quantgate.rundir._files import DATASET_DIR, SUMMARY_FILE, VARIANTS_FILE
from quantgate.rundir._jsonfile import RunFileError
from quantgate.rundir._store import read_model
from quantgate.rundir._summary import COPY_SHA256_SINCE, RunSummary, VariantsFile

__all__ = ["ResumeError", "run_dataset", "run_variants", "variants_file"]


class ResumeError(UsageError):
    """A run directory that cannot be resumed; the message names it and says why."""


def run_dataset(run_dir: Path, summary: RunSummary, given: Dataset | None) -> Dataset:
    """The run's copy of its dataset, checked: as the run wrote it (summary.json's sha256 of each file),
    and the dataset given again, if any, the one the run read (its sha256)."""
    if given is not None and given.sha256 != summary.dataset.sha256:
        raise ResumeError(
            f"--dataset {given.path}: not the run's dataset (sha256 {given.sha256[:12]}…; the run read "
            f"{summary.dataset.path}, sha256 {summary.dataset.sha256[:12]}…)"
        )
    if summary.dataset.copy_sha256 is None:
        _check_written_before_copy_sha256(run_dir)
    else:
        _check_copy(run_dir, summary.dataset.copy_sha256)
    try:
        return load_dataset(run_dir / DATASET_DIR)
    except (DatasetError, FileNotFoundError) as exc:
        raise ResumeError(
            f"--resume {run_dir}: the run's copy of its dataset cannot be read: {exc}"
        ) from None


def _check_written_before_copy_sha256(run_dir: Path) -> None:
    """A summary without `dataset.copy_sha256` must be of a format before it (`COPY_SHA256_SINCE`):
    in a later one it was removed, and the run's copy of its dataset can no longer be checked."""
    path = run_dir / SUMMARY_FILE
    try:
        written = loads_json(path.read_text(encoding="utf-8")).get("format_version", 1)
    except (OSError, ValueError, AttributeError):  # read as a summary a moment ago: not expected
        written = None
    if not isinstance(written, int) or written >= COPY_SHA256_SINCE:
        raise ResumeError(
            f"--resume {run_dir}: {path} (format_version {written}) has no dataset.copy_sha256, which "
            f"every summary of format {COPY_SHA256_SINCE} or later records (the sha256 of each file of "
            "the run's copy of its dataset): it was removed, so the copy cannot be checked; put it back "
            "as it was, or start a new run"
        )


def _check_copy(run_dir: Path, recorded: dict[str, str]) -> None:
    """The run's copy of its dataset must be as the run wrote it (summary.json has each file's
    sha256; a summary written before format 6 has none to check)."""
    found = data_file_hashes(run_dir / DATASET_DIR)
    changed = sorted(name for name in {*recorded, *found} if recorded.get(name) != found.get(name))
    if changed:
        name = changed[0]
        how = "is gone" if name not in found else "was added" if name not in recorded else "was changed"
        raise ResumeError(
            f"--resume {run_dir}: {run_dir / DATASET_DIR / name} {how} since the run started (summary.json "
            "records the sha256 of each file of the run's copy of its dataset); put it back as it was, "
            "or start a new run"
        )


def _planned(metadata: VariantsFile) -> list[Variant]:
    spec_keys = set(VariantSpec.model_fields)
    return [Variant.model_validate(line.model_dump(include=spec_keys)) for line in metadata.variants]


def _identity(variant: VariantSpec) -> dict[str, Any]:
    """What makes two specs the same variant: a model file may have moved if its sha256 is known."""
    kept = variant.model_dump(exclude={"chat_model"})
    if variant.sha256:
        kept.pop("model")
    return kept


def _differences(given: VariantSpec, planned: VariantSpec) -> str:
    mine, theirs = _identity(given), _identity(planned)
    keys = sorted(k for k in {*mine, *theirs} if mine.get(k) != theirs.get(k))
    return "; ".join(f"{k} {mine.get(k)!r} where the run has {theirs.get(k)!r}" for k in keys)


def run_variants(run_dir: Path, metadata: VariantsFile, given: VariantSet | None) -> list[Variant]:
    """The variants to go on with, in run order: those given again, each the same as the run's
    (`_identity`), else the run's own (a chat model given from Python must be given again)."""
    planned = _planned(metadata)
    if given is None:
        own = [v.name for v in planned if capabilities(v).from_python]
        if own:
            raise ResumeError(
                f"--resume {run_dir}: variant {own[0]} is a chat model given from Python; resume it from "
                "Python, passing the same variants (resume_evaluation(..., variant_set=...))"
            )
        return planned
    by_name = {v.name: v for v in given.variants}
    if set(by_name) != {v.name for v in planned}:
        raise ResumeError(
            f"--variants: {', '.join(sorted(by_name))}; the run's variants are "
            f"{', '.join(v.name for v in planned)}: resume with the same variants"
        )
    for variant in planned:
        if not capabilities(variant).from_python and _identity(by_name[variant.name]) != _identity(variant):
            raise ResumeError(
                f"--variants: variant {variant.name} is not the run's: "
                f"{_differences(by_name[variant.name], variant)}"
            )
    return [by_name[v.name] for v in planned]


def variants_file(run_dir: Path) -> VariantsFile:
    """The run's variants.json: every variant it was started with."""
    try:
        return read_model(run_dir / VARIANTS_FILE, VariantsFile)
    except RunFileError as exc:
        raise ResumeError(f"--resume {run_dir}: {exc}") from None
