"""A backend's options, typed: the `options` table of a variant read through its backend's model.

Each backend declares a pydantic model of the options it reads (`RegisteredBackend.options`, a subclass
of `BackendOptions`); `options_of` reads a variant's options through it, so a wrong value is one
`BackendError` naming the variant and the key, before anything is opened. Keys a model does not name
are kept as they are (a backend may hand them on, as llama.cpp's engine parameters are).
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from quantgate.backends._backend_error import BackendError
from quantgate.inputs._variants import Variant

__all__ = ["DEFAULT_TOP_LOGPROBS", "BackendOptions", "OptionsError", "options_of"]

DEFAULT_TOP_LOGPROBS = 20
"""Log-probabilities asked for per position when token fidelity forces a server's model (`top_logprobs`);
20 is the most Ollama and OpenAI's API return."""


class OptionsError(BackendError):
    """A variant's options that its backend's model refuses (the variant and the key named)."""


class BackendOptions(BaseModel):
    """What every backend's options take: retries of a call that failed for a retryable reason."""

    model_config = ConfigDict(extra="allow", frozen=True)

    max_retries: int = Field(2, ge=0)
    """Calls repeated after a retryable failure (a busy server, a timeout)."""
    retry_backoff_s: float = Field(0.5, ge=0)
    """Wait before the first retry, doubled each time."""


Options = TypeVar("Options", bound=BackendOptions)


def options_of(variant: Variant, model: type[Options]) -> Options:
    """The variant's options read through `model`.

    Raises:
        OptionsError: A value the model refuses, e.g. `variant 'q4': options.timeout_s: Input should
            be a valid number (got 'soon')`; every wrong key is named.
    """
    try:
        return model.model_validate(variant.options)
    except ValidationError as exc:
        problems = [
            f"options.{'.'.join(str(part) for part in error['loc'])}: {error['msg']} (got {error['input']!r})"
            for error in exc.errors(include_url=False)
        ]
        raise OptionsError(f"variant {variant.name!r}: {'; '.join(problems)}") from None
