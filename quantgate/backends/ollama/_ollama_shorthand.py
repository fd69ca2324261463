"""The Ollama backend's shorthand, `ollama:TAG`: a model the server has, named by its tag."""

from __future__ import annotations

from quantgate.inputs._shorthands import Shorthand, shorthand_name
from quantgate.inputs._variants import Variant

__all__ = ["SHORTHAND"]


def _parse(spec: str, model: str) -> Variant:
    return Variant(name=shorthand_name(model), backend="ollama", model=model)


SHORTHAND = Shorthand(backend="ollama", model="name", parse=_parse)
