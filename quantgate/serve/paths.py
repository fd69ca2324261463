"""Which files a request may name: paths inside the server's roots, and the bundled datasets.

A path is resolved first (symlinks followed, `..` collapsed), then must lie inside one of
the roots (`--root`, default the working directory). Anything else is refused before the
file is read: `PathRefusedError` (403). A path inside a root that does not exist is `PathMissingError`
(422).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from quantgate.inputs.dataset import bundled_datasets

SHORTHANDS = ("llamacpp:", "ollama:")


class PathRefusedError(PermissionError):
    """A path outside every root."""


class PathMissingError(ValueError):
    """A path inside a root that does not exist."""


def inside_roots(text: str, roots: Sequence[Path], *, what: str) -> Path:
    """The resolved path of `text` (relative paths are taken from the first root).

    Raises:
        PathRefusedError: It resolves outside every root.
        PathMissingError: It is inside a root but does not exist.
    """
    given = Path(text).expanduser()
    path = (given if given.is_absolute() else roots[0] / given).resolve()
    if not any(path.is_relative_to(root.resolve()) for root in roots):
        raise PathRefusedError(f"{what} {text!r} is outside the server's roots")
    if not path.exists():
        raise PathMissingError(f"{what} {text!r}: no such file or directory")
    return path


def dataset_argument(text: str, roots: Sequence[Path]) -> str:
    """A bundled dataset's name as it is, else a path inside the roots."""
    if text in bundled_datasets():
        return text
    return str(inside_roots(text, roots, what="dataset"))


def variant_argument(text: str, roots: Sequence[Path]) -> str:
    """`ollama:TAG` as it is; `llamacpp:PATH` and a variants file with their path inside the roots."""
    if text.startswith("ollama:"):
        return text
    if text.startswith("llamacpp:"):
        return "llamacpp:" + str(inside_roots(text.removeprefix("llamacpp:"), roots, what="model file"))
    return str(inside_roots(text, roots, what="variants file"))
