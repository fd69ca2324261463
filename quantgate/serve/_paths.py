"""Which files a request may lead to: paths inside the server's roots, and the bundled datasets.

A path is resolved first (symlinks followed, `..` collapsed), then must lie inside one of
the roots (`--root`, default the working directory). That holds for every file a request
leads to: the dataset directory and each file of it the dataset formats read (a symlink in it
that points out is refused), variants files, and the model files they or a `llamacpp:`
shorthand name (`quantgate.serve._variant_files`). Anything else is refused before the file is
read: `PathRefusedError` (403). A path inside a root that does not exist is `PathMissingError`
(422); one that exists but cannot be used (a pipe, a file too large) is `UnusableFileError`
(422). The messages name the path as the request gave it and never quote a file's content.

The checks run when the request comes and again when its run starts; the roots are trusted:
whoever can write in them could swap a checked file for a symlink between that check and the run.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from evaluators.errors import UsageError
from quantgate.inputs._corpus import CORPUS_FILE, QUERIES_FILE
from quantgate.inputs._dataset import (
    CARD_FILES,
    CASES_FILE,
    EXAMPLES_FILE,
    SCHEMA_FILE,
    bundled_datasets,
    bundled_root,
)
from quantgate.inputs._shorthands import is_variants_file, parse_spec, shorthand_for
from quantgate.inputs._task_file import TASK_FILE
from quantgate.inputs._variants import VariantSpecError

DATASET_FILES = (TASK_FILE, SCHEMA_FILE, CASES_FILE, EXAMPLES_FILE, CORPUS_FILE, QUERIES_FILE, *CARD_FILES)
"""Every file a dataset directory is read for (datasets of every task kind, retrieval datasets, the card)."""


class PathRefusedError(UsageError, PermissionError):
    """A path outside every root."""


class PathMissingError(UsageError):
    """A path inside a root that does not exist."""


class UnusableFileError(UsageError):
    """A file inside a root that cannot be used as the request says (a pipe, too large, not a
    variants file, not a GGUF); the message never quotes the file's content."""


def inside_roots(text: str, roots: Sequence[Path], *, what: str, base: Path | None = None) -> Path:
    """The resolved path of `text` (a relative one is taken from `base`, by default the first root).

    Raises:
        PathRefusedError: It resolves outside every root.
        PathMissingError: It is inside a root but does not exist (or cannot be looked at).
    """
    try:
        given = Path(text).expanduser()
        path = (given if given.is_absolute() else (base or roots[0]) / given).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, an unknown ~user, a NUL
        raise PathMissingError(f"{what} {text!r} cannot be resolved ({type(exc).__name__})") from None
    if not any(path.is_relative_to(root.resolve()) for root in roots):
        raise PathRefusedError(f"{what} {text!r} is outside the server's roots")
    try:
        path.stat()
    except FileNotFoundError:
        raise PathMissingError(f"{what} {text!r}: no such file or directory") from None
    except OSError as exc:  # a name too long, a permission denied
        raise PathMissingError(f"{what} {text!r} cannot be read: {exc.strerror or exc}") from None
    return path


def regular_file(path: Path, text: str, *, what: str, max_bytes: int | None = None) -> Path:
    """`path` (already inside the roots) if it is a regular file, of at most `max_bytes`.

    Raises:
        PathMissingError: It went away.
        UnusableFileError: A directory, a pipe or a device (opening it could wait for ever), or
            a file larger than `max_bytes`.
    """
    try:
        mode_size = os.stat(path)
    except OSError as exc:  # gone since it was resolved
        raise PathMissingError(f"{what} {text!r} cannot be read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode_size.st_mode):
        raise UnusableFileError(f"{what} {text!r} is not a regular file")
    if max_bytes is not None and mode_size.st_size > max_bytes:
        raise UnusableFileError(f"{what} {text!r} is larger than {max_bytes:,} bytes")
    return path


def dataset_argument(text: str, roots: Sequence[Path]) -> str:
    """A bundled dataset's directory, else a directory inside the roots whose files all are too.

    A bundled name is passed as its directory, so that a directory of that name in the server's
    working directory cannot stand in for it.
    """
    if text in bundled_datasets():
        return str(bundled_root() / text)
    directory = inside_roots(text, roots, what="dataset")
    if not directory.is_dir():
        raise UnusableFileError(
            f"dataset {text!r} is not a directory (give a dataset's directory or a bundled name)"
        )
    for name in DATASET_FILES:
        if (directory / name).is_symlink() or (directory / name).exists():
            shown = str(Path(text) / name)  # resolves as `directory / name` does
            inside = inside_roots(shown, roots, what="dataset file")
            if not inside.is_dir():
                regular_file(inside, shown, what="dataset file")
    return str(directory)


def variant_argument(text: str, roots: Sequence[Path]) -> str:
    """A request's `variants` entry as `resolve_variants` will read it, checked as it will be opened
    (`is_variants_file` tells which): `ollama:TAG` as it is, `llamacpp:PATH` with its path inside the
    roots, a variants file by its resolved path inside them.

    Raises:
        PathRefusedError, PathMissingError: As `inside_roots`.
        UnusableFileError: A shorthand without its model, an `openai:` shorthand (a variants file
            inside a root names such a server), or a file whose name, given or resolved, does not
            end in `.toml`.
    """
    backend, _, rest = text.partition(":")
    try:
        shorthand = shorthand_for(backend)
        if shorthand is not None and not rest:  # refused as `quantgate run` refuses it, no root named
            parse_spec(text)
    except VariantSpecError as exc:
        raise UnusableFileError(str(exc)) from None
    if shorthand is not None and shorthand.model == "address":
        raise UnusableFileError(
            f"variant {text!r}: the API takes no {backend}: shorthand (it names a server's address); name a "
            "variants file inside a root"
        )
    if shorthand is not None and shorthand.model == "file":
        return f"{backend}:" + str(inside_roots(rest, roots, what="model file"))
    if shorthand is not None:
        return text
    path = inside_roots(text, roots, what="variants file")
    if not (is_variants_file(text) and is_variants_file(str(path))):
        raise UnusableFileError(
            f"variants file {text!r}: its name (and that of the file it leads to) must end in .toml; "
            "a model is given as llamacpp:PATH"
        )
    return str(path)
