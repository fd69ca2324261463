"""How a variant of a `"logprobs"` backend is teacher-forced: the forcing that talks to its server,
and the method text its token fidelity records, chosen by the API its backend declares
(`BackendCapabilities.logprobs_api`), never by the backend's name."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.messages import BaseMessage

from quantgate.backends import BackendError, capabilities
from quantgate.evaluate.token_fidelity.ollama_forcing import DEFAULT_TOP_LOGPROBS, Forcing, OllamaForcing
from quantgate.evaluate.token_fidelity.openai_forcing import UNKNOWN_PROMPT, OpenAIForcing
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
    from quantgate.backends.ollama.ollama import DEFAULT_NUM_CTX, ollama_host
    from quantgate.backends.streaming import DEFAULT_TIMEOUT_S

    options = variant.options
    return OllamaForcing(
        host=ollama_host(variant),
        model=variant.model,
        options={
            "num_ctx": int(options.get("num_ctx", DEFAULT_NUM_CTX)),
            "seed": int(options.get("seed", 0)),
        },
        top_logprobs=int(options.get("top_logprobs", DEFAULT_TOP_LOGPROBS)),
        timeout_s=float(options.get("timeout_s", DEFAULT_TIMEOUT_S)),
    )


def _openai_forcing(variant: Variant) -> OpenAIForcing:
    from quantgate.backends.openai.openai import completion_prompt, openai_endpoint

    base_url, model, api_key = openai_endpoint(variant)
    options = variant.options
    return OpenAIForcing(
        base_url=base_url,
        model=model,
        api_key=api_key,
        top_logprobs=int(options.get("top_logprobs", DEFAULT_TOP_LOGPROBS)),
        timeout_s=float(options.get("timeout_s", 300.0)),
        seed=int(options.get("seed", 0)),
        render=completion_prompt(variant),
        echo=bool(options.get("logprobs_echo", False)),
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
