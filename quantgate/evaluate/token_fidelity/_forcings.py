"""How a variant of a `"logprobs"` backend is teacher-forced: the forcing that talks to its server,
and the method text its token fidelity records, as its backend declares them
(`BackendCapabilities.logprobs_forcing`, each backend's in its folder), never by the backend's name."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from quantgate.backends import BackendError, capabilities
from quantgate.backends._forcing import Forcing
from quantgate.backends.ollama._ollama_forcing import OLLAMA_METHOD
from quantgate.backends.openai._openai_forcing import OPENAI_METHOD
from quantgate.inputs._variants import Variant

__all__ = ["OLLAMA_METHOD", "OPENAI_METHOD", "forcing_problem", "logprobs_forcing", "pair_member_forcing"]


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


def forcing_problem(variant: Variant, forcing: Forcing, messages: Sequence[BaseMessage]) -> str | None:
    """Why the variant's `forcing` cannot follow a target after `messages` (asked once, before
    measuring), as its backend declares it (an OpenAI-compatible server whose prompt text is
    unknown); None when it can."""
    declared = capabilities(variant).logprobs_forcing
    return None if declared is None else declared.unfollowable(forcing, messages)


def pair_member_forcing(variant: Variant) -> Forcing:
    """A runtime pair's member forced along the prompt text quantgate renders, as its backend
    declares it (`LogprobsForcing.pair_member`).

    Raises:
        BackendError: Why the variant cannot be measured as a pair's member.
    """
    declared = capabilities(variant).logprobs_forcing
    if declared is None or declared.pair_member is None:
        raise BackendError(f"the {variant.backend} backend declares no forcing of a runtime pair's member")
    return declared.pair_member(variant)
