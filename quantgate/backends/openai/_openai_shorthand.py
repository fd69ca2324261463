"""The OpenAI-compatible backend's shorthand, `openai:MODEL@BASE_URL`: the server's model name and its
API root (`http://host:8000/v1`); an API key needs a variants file (`options.api_key_env`)."""

from __future__ import annotations

import re

from quantgate.inputs._shorthands import Shorthand, shorthand_name
from quantgate.inputs._variants import Variant, VariantSpecError

__all__ = ["SHORTHAND"]


def _parse(spec: str, rest: str) -> Variant:
    found = re.fullmatch(r"(.+)@(https?://\S+)", rest)
    if found is None:
        raise VariantSpecError(
            f"variant {spec!r}: expected openai:MODEL@BASE_URL, e.g. openai:q4_k_m@http://127.0.0.1:8000/v1 "
            "(an API key: a variants file's options.api_key_env)"
        )
    model, base_url = found.groups()
    return Variant(name=shorthand_name(model), backend="openai", model=model, options={"base_url": base_url})


SHORTHAND = Shorthand(backend="openai", model="address", parse=_parse)
