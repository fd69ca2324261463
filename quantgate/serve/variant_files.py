"""The variants of a request, resolved by the server into one variants file in the job's directory.

The server reads each variants file the request names (inside the roots) with the project's own
reader, checks every model file a variant loads (`model_file` backends: from a file or a
`llamacpp:` shorthand) the same way as the paths of the request, refuses a file that is no GGUF
before the run opens it, and writes the result, each model as its resolved path, to
`OUT/<job>/variants.toml`: the run reads that file, not the request's, and no variants list,
however long, goes on its command line. A relative model path in a variants file is taken from
the server's working directory, as `quantgate run` there takes it.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from evaluators import error_path
from quantgate.backends import capabilities
from quantgate.inputs.gguf_files import ModelFileError, read_gguf_layout
from quantgate.inputs.variants import (
    Variant,
    VariantSet,
    VariantSpecError,
    load_variants_file,
    resolve_variants,
    write_variants_file,
)
from quantgate.serve.paths import UnusableFileError, inside_roots, regular_file, variant_argument

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


def write_job_variants(items: Sequence[str], roots: Sequence[Path], job_dir: Path) -> Path:
    """Resolve a request's variants (files and shorthands) into `job_dir`'s variants file.

    Raises:
        PathRefusedError: A variants or model file outside the roots.
        PathMissingError: One inside them that does not exist.
        UnusableFileError: A variants file that cannot be read as one, a model file that is no
            GGUF, or variants that cannot run together.
    """
    arguments = [variant_argument(item, roots) for item in items]
    for item, argument in zip(items, arguments, strict=True):
        if not argument.startswith(("ollama:", "llamacpp:")):
            path = regular_file(Path(argument), item, what="variants file", max_bytes=MAX_VARIANTS_FILE_BYTES)
            try:
                load_variants_file(path)
            except VariantSpecError as exc:
                raise UnusableFileError(f"variants file {item!r}: {_reason(exc)}") from None
    try:
        variant_set = resolve_variants(arguments)
    except VariantSpecError as exc:  # names and shorthands, no file content
        raise UnusableFileError(str(exc)) from None
    checked = VariantSet(
        reference=variant_set.reference, variants=[_checked_model(v, roots) for v in variant_set.variants]
    )
    job_dir.mkdir(parents=True, exist_ok=True)
    write_variants_file(job_dir / JOB_VARIANTS_FILE, checked)
    return job_dir / JOB_VARIANTS_FILE
