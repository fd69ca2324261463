"""The variants of a request, resolved by the server into one variants file in the job's directory.

The server reads each variants file the request names (inside the roots) with the project's own
reader, checks every path a variant names (the model a `model_file` backend loads, from a file or
a `llamacpp:` shorthand, and any variant's `options.model_file`, which is hashed) the same way as
the paths of the request, before anything opens it, refuses a model file that is no GGUF, refuses
an `api_key_env` the operator did not allow (`quantgate.serve._environment`), and writes the result,
each path resolved, to `OUT/<job>/variants.toml`: the run reads that file, not the request's, and
no variants list, however long, goes on its command line. A relative path in a variants file is
taken from the server's working directory, as `quantgate run` there takes it.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evaluators import error_path
from quantgate.backends import OptionsError, backend_options, capabilities
from quantgate.inputs._gguf_files import ModelFileError, read_gguf_layout
from quantgate.inputs._shorthands import is_variants_file, resolve_variants
from quantgate.inputs._variants import (
    MODEL_FILE_OPTION,
    Variant,
    VariantSet,
    VariantSpecError,
    load_variants_file,
    write_variants_file,
)
from quantgate.serve._paths import UnusableFileError, inside_roots, regular_file, variant_argument

JOB_VARIANTS_FILE = "variants.toml"
MAX_VARIANTS_FILE_BYTES = 1_000_000
"""The largest variants file the server reads (a ladder's file is about 1 KB per variant)."""


def _reason(exc: VariantSpecError) -> str:
    """Why a variants file could not be read, without quoting any of its content."""
    cause = exc.__cause__
    if isinstance(cause, tomllib.TOMLDecodeError):
        where = re.search(r"at line \d+, column \d+", str(cause))
        return "not valid TOML" + (f" ({where.group()})" if where else "")
    if isinstance(cause, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(cause, ValidationError):
        keys = "; ".join(f"{error_path(e['loc'])}: {e['type']}" for e in cause.errors()[:5])
        return f"not a valid variants file ({keys})"
    if isinstance(cause, OSError):
        return f"cannot be read ({cause.strerror or type(cause).__name__})"
    return str(exc)  # a problem between variants that parsed (two of one name, ...): names, no content


def _option_file(text: str, roots: Sequence[Path], what: str) -> Path:
    """An `options.model_file` resolved inside the roots (from the working directory), a regular file."""
    return regular_file(inside_roots(text, roots, what=what, base=Path.cwd()), text, what=what)


def _check_option_files(path: Path, item: str, roots: Sequence[Path]) -> None:
    """Check each `options.model_file` of a variants file before its reader hashes it; a file
    that does not parse is left to the reader, which says why."""
    try:
        raw: Any = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return
    entries = raw.get("variants") if isinstance(raw.get("variants"), list) else []
    for number, entry in enumerate(entries, start=1):
        options = entry.get("options") if isinstance(entry, dict) else None
        if isinstance(options, dict) and MODEL_FILE_OPTION in options:
            what = f"variant {number} of {item!r}: options.{MODEL_FILE_OPTION}"
            _option_file(str(options[MODEL_FILE_OPTION]), roots, what)


def _checked(variant: Variant, roots: Sequence[Path], allow_env: Sequence[str]) -> Variant:
    """The variant with its paths resolved inside the roots, its model a GGUF, its options ones its
    backend takes (`backend_options`), naming only environment variables the operator allowed."""
    try:
        options = backend_options(variant)
    except OptionsError as exc:  # the keys, not their values: a file's content is never quoted
        refused = ", ".join(f"options.{key}" for key in exc.keys)
        raise UnusableFileError(
            f"variant {variant.name}: {refused}: not an option of the {variant.backend} backend, or a "
            "value it refuses (`quantgate run` with the file names why)"
        ) from None
    for key, name in options.environment_options().items():
        if name not in allow_env:
            raise UnusableFileError(
                f"variant {variant.name}: {key} {name!r} is not a variable this server lets runs read "
                "(its operator allows one with `quantgate serve --allow-env NAME`)"
            )
    model_file = options.served_model_file()
    if model_file is not None:
        what = f"variant {variant.name}: options.{MODEL_FILE_OPTION}"
        resolved = _option_file(model_file, roots, what)
        resolved_options = {**variant.options, MODEL_FILE_OPTION: str(resolved)}
        variant = variant.model_copy(update={"options": resolved_options})
    return _checked_model(variant, roots)


def _checked_model(variant: Variant, roots: Sequence[Path]) -> Variant:
    """The variant with its model file resolved inside the roots and checked to be a GGUF."""
    if not capabilities(variant).model_file:
        return variant
    what = f"variant {variant.name}: model file"
    if not variant.model:
        raise UnusableFileError(f"{what} not given (its `model` is empty)")
    path = regular_file(
        inside_roots(variant.model, roots, what=what, base=Path.cwd()), variant.model, what=what
    )
    try:
        read_gguf_layout(path)
    except ModelFileError:
        raise UnusableFileError(f"{what} {variant.model!r} is not a complete GGUF file") from None
    return variant.model_copy(update={"model": str(path)})


def write_job_variants(
    items: Sequence[str], roots: Sequence[Path], job_dir: Path, *, allow_env: Sequence[str] = ()
) -> Path:
    """Resolve a request's variants (files and shorthands) into `job_dir`'s variants file;
    `allow_env`: the variables an `api_key_env` may name.

    Raises:
        PathRefusedError: A variants or model file outside the roots.
        PathMissingError: One inside them that does not exist.
        UnusableFileError: A variants file that cannot be read as one, a model file that is no
            GGUF, an option the variant's backend refuses (a wrong value, an unknown key), an
            `api_key_env` not in `allow_env`, or variants that cannot run together.
    """
    arguments = [variant_argument(item, roots) for item in items]
    for item, argument in zip(items, arguments, strict=True):
        if is_variants_file(argument):
            path = regular_file(Path(argument), item, what="variants file", max_bytes=MAX_VARIANTS_FILE_BYTES)
            _check_option_files(path, item, roots)
            try:
                load_variants_file(path)
            except VariantSpecError as exc:
                raise UnusableFileError(f"variants file {item!r}: {_reason(exc)}") from None
    try:
        variant_set = resolve_variants(arguments)
    except VariantSpecError as exc:  # names and shorthands, no file content
        raise UnusableFileError(str(exc)) from None
    checked = VariantSet(
        reference=variant_set.reference,
        variants=[_checked(v, roots, allow_env) for v in variant_set.variants],
    )
    job_dir.mkdir(parents=True, exist_ok=True)
    write_variants_file(job_dir / JOB_VARIANTS_FILE, checked)
    return job_dir / JOB_VARIANTS_FILE
