"""A backend's options, typed: the `options` table of a variant read through its backend's model.

Each backend declares a pydantic model of the options it reads (`RegisteredBackend.options`, a subclass
of `BackendOptions`); `options_of` reads a variant's options through it, so a wrong value is one
`BackendError` naming the variant and the key, before anything is opened. A key the model does not
name is refused the same way, with the keys it accepts (`extra="forbid"`): a misspelt `n_ctxx` is not
dropped in silence. A backend that declares no model of its own reads `UncheckedOptions`, which keep
every key (what it does with them is its own affair). What a backend forwards to its runtime as it is
goes in an option of its own (the OpenAI-compatible backend's `extra_body` table).
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from quantgate.backends._backend_error import BackendError
from quantgate.inputs._variants import MODEL_FILE_OPTION, Variant

__all__ = [
    "DEFAULT_TOP_LOGPROBS",
    "BackendOptions",
    "OptionsError",
    "ServedModelOptions",
    "UncheckedOptions",
    "options_of",
]

DEFAULT_TOP_LOGPROBS = 20
"""Log-probabilities asked for per position when token fidelity forces a server's model (`top_logprobs`);
20 is the most Ollama and OpenAI's API return."""


class OptionsError(BackendError):
    """A variant's options that its backend's model refuses (the variant and the key named).

    Attributes:
        keys: The refused options' names (`n_ctxx`, `extra_body.seed`), for a message that must not
            quote their values.
    """

    def __init__(self, message: str, *, keys: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.keys = keys


class BackendOptions(BaseModel):
    """What every backend's options take: retries of a call that failed for a retryable reason. A key
    that neither this nor a backend's subclass names is refused (`extra="forbid"`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_retries: int = Field(2, ge=0)
    """Calls repeated after a retryable failure (a busy server, a timeout)."""
    retry_backoff_s: float = Field(0.5, ge=0)
    """Wait before the first retry, doubled each time."""

    def environment_options(self) -> dict[str, str]:
        """Option name to the environment variable it makes a run read (an API key's); none by
        default. The HTTP API lets a run read only the variables its operator allowed."""
        return {}

    def served_model_file(self) -> str | None:
        """The local model file a server loads for the variant (hashed for its `sha256`); None by default."""
        return None

    def cpu_threads(self) -> int | None:
        """The CPU threads the model computes with in the evaluating process, when the options say
        (a Ray task declares as many CPUs); None by default."""
        return None

    def quantized_v_cache_refused(self) -> str | None:
        """Why these options rule out a quantized V cache (see `kv_cache_problem`); None by default."""
        return None

    def prompt_format(self) -> str | None:
        """The prompt the variant reads when its options change it from its backend's own (the
        embedded backend's `chat_template`), for token fidelity, which compares variants on one
        prompt; None by default."""
        return None

    def verification(self) -> bool | None:
        """Whether the variant verifies given answers when its options decide it (the OpenAI-compatible
        backend's `verify`), over its backend's declared `verification`; None by default: as declared."""
        return None

    def model_file_problem(self, path: Path) -> str | None:
        """Why the variant's model file at `path` (already checked as a complete GGUF) cannot serve
        these options, read from its header before any model loads; None by default."""
        return None


class UncheckedOptions(BackendOptions):
    """The options of a backend that declares no model of its own: the common keys are typed, any
    other is kept as given (the backend reads it from `variant.options`)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    def served_model_file(self) -> str | None:
        """The `model_file` option, kept as given, which `Variant` hashes whatever the backend."""
        value = (self.model_extra or {}).get(MODEL_FILE_OPTION)
        return None if value is None else str(value)


class ServedModelOptions(BackendOptions):
    """The options of a backend whose model a server loads: the file it loads, when it is local."""

    model_file: str | None = None
    """The GGUF file the server loads, when local: hashed for the variant's `sha256` and
    `file_size_bytes` when it gives none (`Variant`), so the same file on two runtimes is known as such."""

    def served_model_file(self) -> str | None:
        """The `model_file` option."""
        return self.model_file


Options = TypeVar("Options", bound=BackendOptions)


def options_of(variant: Variant, model: type[Options]) -> Options:
    """The variant's options read through `model`.

    Raises:
        OptionsError: A value the model refuses, e.g. `variant 'q4': options.timeout_s: Input should
            be a valid number (got 'soon')`, or a key it does not name (`options.n_ctxx: not an option
            of the llamacpp backend (it accepts: ...)`); every wrong key is named.
    """
    try:
        return model.model_validate(variant.options)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        problems = [_problem(error, variant.backend, model) for error in errors]
        keys = tuple(_key(error) for error in errors)
        raise OptionsError(f"variant {variant.name!r}: {'; '.join(problems)}", keys=keys) from None


def _key(error: ErrorDetails) -> str:
    return ".".join(str(part) for part in error["loc"])


def _problem(error: ErrorDetails, backend: str, model: type[BackendOptions]) -> str:
    """One refused key as the message says it: an unknown key with the keys the backend accepts."""
    where = f"options.{_key(error)}"
    if error["type"] == "extra_forbidden":
        accepted = ", ".join(sorted(model.model_fields))
        return f"{where}: not an option of the {backend} backend (it accepts: {accepted})"
    return f"{where}: {error['msg']} (got {error['input']!r})"
