"""How a variant of a `"logprobs"` backend is teacher-forced: the forcing that talks to its server,
and the method text its token fidelity records, chosen by the API its backend declares
(`BackendCapabilities.logprobs_api`), never by the backend's name."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.messages import BaseMessage

from quantgate.backends import BackendError, capabilities, options_of
from quantgate.backends.forcing import Forcing
from quantgate.backends.ollama.ollama_forcing import OllamaForcing
from quantgate.backends.openai.openai_forcing import UNKNOWN_PROMPT, OpenAIForcing
from quantgate.inputs.variants import Variant

__all__ = ["OLLAMA_METHOD", "OPENAI_METHOD", "forcing_problem", "logprobs_forcing"]

OLLAMA_METHOD = (
    "resumed greedy generation over Ollama's chat API with logprobs: each model follows the "
    "reference's output from the case's first-attempt messages (prefilling the output so far after "
    "each disagreement); per output position a lower bound of KL(reference || variant) from the two "
    "top-{k} lists (tokens outside both merged into one bucket, nats) and top-1 agreement, pooled "
    "over positions"
)
OPENAI_METHOD = (
    "top-{k} log-probabilities from an OpenAI-compatible server: each model follows the reference's "
    "output after the prompt text of the case's first attempt by resumed greedy completion with "
    "logprobs on /v1/completions (the output so far appended to the prompt after each disagreement; "
    "with logprobs_echo, one echo request per case where the server answers it); per output position "
    "a lower bound of "
    "KL(reference || variant) from the two top-{k} lists (tokens outside both merged into one bucket, "
    "nats) and top-1 agreement, pooled over positions"
)


def _ollama_forcing(variant: Variant) -> OllamaForcing:
    from quantgate.backends.ollama.ollama import ollama_host
    from quantgate.backends.ollama.ollama_options import OllamaOptions

    options = options_of(variant, OllamaOptions)
    return OllamaForcing(
        host=ollama_host(variant),
        model=variant.model,
        options={"num_ctx": options.num_ctx, "seed": options.seed},
        top_logprobs=options.top_logprobs,
        timeout_s=options.timeout_s,
    )


OPENAI_FORCING_TIMEOUT_S = 300.0
"""A forcing call's time limit on an OpenAI-compatible server when the variant's `timeout_s` does not say."""


def _openai_forcing(variant: Variant) -> OpenAIForcing:
    from quantgate.backends.openai.openai import completion_prompt, openai_endpoint
    from quantgate.backends.openai.openai_options import OpenAIOptions

    base_url, model, api_key = openai_endpoint(variant)
    options = options_of(variant, OpenAIOptions)
    given = "timeout_s" in options.model_fields_set
    return OpenAIForcing(
        base_url=base_url,
        model=model,
        api_key=api_key,
        top_logprobs=options.top_logprobs,
        timeout_s=options.timeout_s if given else OPENAI_FORCING_TIMEOUT_S,
        seed=options.seed,
        render=completion_prompt(variant),
        echo=options.logprobs_echo,
    )


_FORCINGS: dict[str, tuple[Callable[[Variant], Forcing], str]] = {
    "ollama": (_ollama_forcing, OLLAMA_METHOD),
    "openai": (_openai_forcing, OPENAI_METHOD),
}
"""For each `BackendCapabilities.logprobs_api`: how a variant's forcing is made, and the method
text (`{k}` for its top-k)."""


def logprobs_forcing(variant: Variant) -> tuple[Forcing, str]:
    """The forcing for one variant of a `"logprobs"` backend, by the API its backend declares
    (`logprobs_api`), and its method text (`{k}` for its top-k).

    Raises:
        BackendError: The variant's backend declares no logprobs API, or its options are not
            valid for it (an openai variant's `base_url`, `api_key_env`, `api`).
    """
    api = capabilities(variant).logprobs_api
    found = _FORCINGS.get(api) if api is not None else None
    if found is None:
        raise BackendError(
            f"no top-k forcing for the {variant.backend} backend: it declares no logprobs_api "
            f"(one of {', '.join(_FORCINGS)})"
        )
    make, method = found
    return make(variant), method


def forcing_problem(forcing: Forcing, messages: Sequence[BaseMessage]) -> str | None:
    """Why `forcing` cannot follow a target after `messages` (asked once, before measuring): an
    OpenAI-compatible forcing whose prompt text is unknown; None when it can."""
    if isinstance(forcing, OpenAIForcing) and forcing.prompt(messages) is None:
        return UNKNOWN_PROMPT
    return None
