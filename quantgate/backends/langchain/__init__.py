"""The `langchain` backend: a variant that carries a LangChain chat model object given from Python.

`BACKEND` is its record, named in the `quantgate.backends` entry-point group (pyproject.toml) like any
plugin's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from quantgate._hardware import package_version
from quantgate.backends import BackendError, OpenedVariant, RegisteredBackend
from quantgate.backends._declared_capabilities import BackendCapabilities
from quantgate.inputs._variants import Variant

CAPABILITIES = BackendCapabilities(
    token_fidelity=None, process_isolation=False, parallel="none", memory="process", from_python=True
)
"""A chat model object: it stays in this process (it does not pickle) and a spec cannot rebuild it."""


@contextmanager
def open_chat_model(
    variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
) -> Iterator[OpenedVariant]:
    """Hand out the variant's own chat model."""
    if variant.chat_model is None:
        raise BackendError(f"variant {variant.name}: backend 'langchain' needs a chat_model object")
    yield OpenedVariant(
        chat_model=variant.chat_model,
        runtime={"name": type(variant.chat_model).__name__, "version": package_version("langchain-core")},
    )


BACKEND = RegisteredBackend(name="langchain", open=open_chat_model, capabilities=CAPABILITIES)

__all__ = ["BACKEND", "CAPABILITIES", "open_chat_model"]
