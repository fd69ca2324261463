"""The embedded backend's shorthand, `llamacpp:PATH.gguf`: a local GGUF file, named by its stem."""

from __future__ import annotations

import re
from pathlib import Path

from quantgate.inputs._shorthands import Shorthand
from quantgate.inputs._variants import Variant, VariantSpecError

__all__ = ["SHORTHAND"]


def _parse(spec: str, model: str) -> Variant:
    path = Path(model).expanduser()
    if not path.is_file():
        raise VariantSpecError(f"variant {spec!r}: no GGUF file at {path}")
    stem = re.sub(r"[^A-Za-z0-9_.+\-]", "_", path.stem)
    return Variant(name=stem, backend="llamacpp", model=str(path.resolve()))


SHORTHAND = Shorthand(backend="llamacpp", model="file", parse=_parse)
