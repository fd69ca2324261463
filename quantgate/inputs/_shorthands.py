"""Variant entries as a user gives them: a `BACKEND:MODEL` shorthand, read by its backend's
`Shorthand` (each backend's folder registers one in the `quantgate.variant_shorthands` entry-point
group, a plugin's as the built-ins'), or a variants file; `resolve_variants` turns a command line's
entries into one variant set (the models and the file format are `quantgate.inputs._variants`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from quantgate.inputs._dataset import validation_problems
from quantgate.inputs._variants import (
    Variant,
    VariantSet,
    VariantSpecError,
    file_origins,
    load_variants_file,
    unique_variants,
)


@dataclass(frozen=True, kw_only=True)
class Shorthand:
    """How a backend reads its `BACKEND:MODEL` shorthand (`ollama:gemma3:1b`); each backend's folder
    names one in the `quantgate.variant_shorthands` entry-point group, a plugin's as the built-ins'.

    Attributes:
        backend: The `BACKEND:` it reads.
        model: What MODEL is, which the HTTP API checks before a run opens it: `"name"` (a name the
            backend resolves, given as it is), `"file"` (a local path, checked inside the roots) or
            `"address"` (it names a server: the API refuses the shorthand).
        parse: The variant of a shorthand, given the whole spec and its MODEL; raises `VariantSpecError`.
    """

    backend: str
    model: Literal["name", "file", "address"]
    parse: Callable[[str, str], Variant]


SHORTHAND_GROUP = "quantgate.variant_shorthands"
_SHORTHANDS: dict[str, Shorthand] = {}


def register_shorthand(shorthand: Shorthand) -> Shorthand | None:
    """Make `shorthand` read its backend's shorthands; returns the one it replaced, if any."""
    previous = _SHORTHANDS.get(shorthand.backend)
    _SHORTHANDS[shorthand.backend] = shorthand
    return previous


def shorthand_for(backend: str) -> Shorthand | None:
    """The shorthand of `backend`: registered, else named by an installed package; None when none is.

    Raises:
        VariantSpecError: The entry point that names it cannot be loaded or is not a `Shorthand`.
    """
    if backend in _SHORTHANDS or not backend:
        return _SHORTHANDS.get(backend)
    for entry_point in entry_points(group=SHORTHAND_GROUP, name=backend):
        where = f"entry point {backend!r} of {entry_point.value!r} (group {SHORTHAND_GROUP})"
        try:
            found = entry_point.load()
        except Exception as exc:  # a plugin's import can fail in any way: name it and the plugin
            raise VariantSpecError(f"{where} could not be loaded: {type(exc).__name__}: {exc}") from exc
        if not isinstance(found, Shorthand) or found.backend != entry_point.name:
            raise VariantSpecError(f"{where} is {found!r}, not a Shorthand of {backend!r}")
        _SHORTHANDS[backend] = found
        return found
    return None


def shorthand_backends() -> list[str]:
    """The backends with a shorthand, registered or installed, sorted."""
    return sorted(
        set(_SHORTHANDS) | {entry_point.name for entry_point in entry_points(group=SHORTHAND_GROUP)}
    )


def parse_spec(spec: str) -> Variant:
    """Read a `BACKEND:MODEL` shorthand (`llamacpp:PATH.gguf`, `ollama:gemma3:12b-it-q4_K_M`) with its
    backend's `Shorthand`.

    Raises:
        VariantSpecError: No backend with that shorthand, an empty model, or what the backend refuses.
    """
    backend, sep, model = spec.partition(":")
    if not sep or not model:
        raise VariantSpecError(
            f"variant {spec!r}: expected BACKEND:MODEL, e.g. llamacpp:model.gguf or ollama:gemma3:12b, "
            "or a variants .toml file"
        )
    shorthand = shorthand_for(backend)
    if shorthand is None:
        known = ", ".join(shorthand_backends()) or "none installed"
        raise VariantSpecError(f"variant {spec!r}: unknown backend {backend!r} (known: {known})")
    return shorthand.parse(spec, model)


def shorthand_name(model: str) -> str:
    """A variant name from a shorthand's model (characters outside the name rule's become `_`)."""
    return re.sub(r"[^A-Za-z0-9_.:+\-]", "_", model)


def is_variants_file(item: str) -> bool:
    """Whether a `--variants` entry names a variants file: it ends in `.toml` and does not start with
    a shorthand's `BACKEND:` (`ollama:x.toml` is an Ollama tag; name such a file `./ollama:x.toml`).
    The one rule that both `resolve_variants` and the HTTP API's checks read an entry by."""
    return item.endswith(".toml") and shorthand_for(item.partition(":")[0]) is None


def resolve_variants(items: list[str]) -> VariantSet:
    """Turn CLI arguments (TOML files and shorthands, mixed) into one variant set.

    The reference is the first file's `reference`, if any; `is_variants_file` tells files from shorthands.

    Raises:
        VariantSpecError: A bad file or shorthand, two variants of one name, or variants that
            cannot run together; the message names the files or shorthands.
    """
    variants: list[Variant] = []
    origins: list[str] = []
    reference: str | None = None
    for item in items:
        if is_variants_file(item):
            loaded = load_variants_file(Path(item))
            reference = reference or loaded.reference
            variants.extend(loaded.variants)
            origins.extend(file_origins(Path(item), len(loaded.variants)))
        else:
            try:
                variants.append(parse_spec(item))
            except ValidationError as exc:  # a name the shorthand gives that breaks the name rule
                problems = "; ".join(p.message for p in validation_problems(exc, file="", line=None))
                raise VariantSpecError(f"variant {item!r}: {problems}") from None
            origins.append(item)
    try:
        return VariantSet(reference=reference, variants=unique_variants(variants, origins))
    except ValidationError as exc:  # e.g. files that use different grammar engines
        problems = "; ".join(p.message for p in validation_problems(exc, file="", line=None))
        raise VariantSpecError(f"--variants {' '.join(items)}: {problems}") from exc
