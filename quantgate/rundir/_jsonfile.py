"""JSON run files through their typed models: atomic writes, and reads that name the file.

Every file of a run directory is parsed by its pydantic model (`quantgate.rundir._lines`,
`.summary`, `.decision`); a file written by another quantgate is refused with a message naming
it and its `format_version`, and one of a model's `older_format_versions` is read as the current
version (through the model's `upgraded(value, version)` where it has one: a key that moved).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from evaluators import loads_json
from evaluators.errors import QuantgateError, UsageError

ModelT = TypeVar("ModelT", bound=BaseModel)


class RunFileError(UsageError):
    """A run file that cannot be read: missing, not JSON, of an unknown format version, or
    not matching its model. The message names the file (and line)."""


class RunWriteError(QuantgateError, RuntimeError):
    """A run file that could not be written (the disk is full, the directory went away, ...).

    What was written before stays: a JSONL file keeps its complete lines, a JSON file its
    previous version. The message names the file and the reason.
    """

    def __init__(self, path: Path, error: OSError) -> None:
        reason = error.strerror or str(error)
        super().__init__(f"cannot write {path}: {reason}; what was written before it is kept")
        self.path = path
        self.errno = error.errno
        self.reason = reason


def write_json(path: Path, value: Any) -> None:
    """Write JSON atomically (temporary file, then rename); a failure leaves the previous file.

    Raises:
        RunWriteError: The file could not be written (the previous version is left as it was).
    """
    # allow_nan=False: `Infinity` or `NaN` is no JSON (Node's JSON.parse refuses it), so a figure
    # that is not finite fails here (ValueError), loudly, before the file is touched
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str, allow_nan=False)
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())  # on disk before the rename: a power cut leaves the old file or the new
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise RunWriteError(path, exc) from exc


def write_model(path: Path, value: BaseModel) -> None:
    """Write a run-file model as indented JSON, atomically."""
    write_json(path, value.model_dump(mode="json"))


def _known_version(model: type[BaseModel]) -> int:
    field = model.model_fields.get("format_version")
    return int(field.default) if field is not None else 1


def validated(model: type[ModelT], value: Any) -> ModelT | str:
    """`value` through its model, or what is wrong with it (its version, the keys that do not match).

    A missing `format_version` is read as 1 (files written before it was added); one of the
    model's `older_format_versions` is read as the current version.
    """
    if isinstance(value, dict):
        version = value.get("format_version", 1)
        known = _known_version(model)
        older: tuple[int, ...] = getattr(model, "older_format_versions", ())
        if version in older:
            upgraded = getattr(model, "upgraded", None)  # where a key moved since `version`
            value = {**(upgraded(value, version) if upgraded is not None else value), "format_version": known}
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
    parsed = validated(model, value)
    if isinstance(parsed, str):
        raise RunFileError(f"{where}: {parsed}")
    return parsed


def read_model(path: Path, model: type[ModelT]) -> ModelT:
    """Read a JSON run file through its model."""
    try:
        value = loads_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunFileError(f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise RunFileError(f"{path}: not JSON ({exc})") from None
    return parse_model(model, value, where=str(path))
