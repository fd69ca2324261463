"""How a variant of a `"logprobs"` backend is teacher-forced: the forcing that talks to its server,
and the method text its token fidelity records, as its backend declares them
(`BackendCapabilities.logprobs_forcing`, each backend's in its folder), never by the backend's name."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from quantgate.backends import BackendError, capabilities
from quantgate.backends._forcing import Forcing
from quantgate.backends.ollama._ollama_forcing import OLLAMA_METHOD
from quantgate.backends.openai._openai_forcing import OPENAI_METHOD, UNKNOWN_PROMPT, OpenAIForcing
from quantgate.inputs._variants import Variant

__all__ = ["OLLAMA_METHOD", "OPENAI_METHOD", "forcing_problem", "logprobs_forcing"]


def logprobs_forcing(variant: Variant) -> tuple[Forcing, str]:
    """The forcing for one variant of a `"logprobs"` backend, as its backend declares it
    (`BackendCapabilities.logprobs_forcing`), and its method text (`{k}` for its top-k).

    Raises:
        BackendError: The variant's backend declares no forcing, or its options are not valid for
            it (an openai variant's `base_url`, `api_key_env`, `api`).
    """
    declared = capabilities(variant).logprobs_forcing
    if declared is None:
        raise BackendError(
            f"no top-k forcing for the {variant.backend} backend: it declares no logprobs_forcing"
        )
    return declared.make(variant), declared.method


def forcing_problem(forcing: Forcing, messages: Sequence[BaseMessage]) -> str | None:
    """Why `forcing` cannot follow a target after `messages` (asked once, before measuring): an
    OpenAI-compatible forcing whose prompt text is unknown; None when it can."""
    if isinstance(forcing, OpenAIForcing) and forcing.prompt(messages) is None:
        return UNKNOWN_PROMPT
    return None
