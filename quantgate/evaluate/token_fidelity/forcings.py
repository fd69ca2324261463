"""How a variant of a `"logprobs"` backend is teacher-forced: the forcing that talks to its server,
and the method text its token fidelity records."""

from __future__ import annotations

from collections.abc import Callable

from quantgate.backends import BackendError
from quantgate.evaluate.token_fidelity.ollama_forcing import DEFAULT_TOP_LOGPROBS, Forcing, OllamaForcing
from quantgate.evaluate.token_fidelity.openai_forcing import OpenAIForcing
from quantgate.inputs.variants import Variant

__all__ = ["OLLAMA_METHOD", "OPENAI_METHOD", "logprobs_forcing"]

OLLAMA_METHOD = (
    "resumed greedy generation over Ollama's chat API with logprobs: each model follows the "
    "reference's output from the case's first-attempt messages (prefilling the output so far after "
    "each disagreement); per output position a lower bound of KL(reference || variant) from the two "
    "top-{k} lists (tokens outside both merged into one bucket, nats) and top-1 agreement, pooled "
    "over positions"
)
OPENAI_METHOD = (
    "top-{k} log-probabilities from an OpenAI-compatible server: each model scores the reference's "
    "output after the case's first-attempt prompt in one /v1/completions request with echo where the "
    "server offers it (else resumed greedy generation with logprobs, prefilling the output so far "
    "after each disagreement); per output position a lower bound of KL(reference || variant) from "
    "the two top-{k} lists (tokens outside both merged into one bucket, nats) and top-1 agreement, "
    "pooled over positions"
)


def _ollama_forcing(variant: Variant) -> OllamaForcing:
    from quantgate.backends.ollama import DEFAULT_NUM_CTX, DEFAULT_TIMEOUT_S, ollama_host

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
    from quantgate.backends.openai import openai_endpoint

    base_url, model, api_key = openai_endpoint(variant)
    options = variant.options
    return OpenAIForcing(
        base_url=base_url,
        model=model,
        api_key=api_key,
        top_logprobs=int(options.get("top_logprobs", DEFAULT_TOP_LOGPROBS)),
        timeout_s=float(options.get("timeout_s", 300.0)),
        seed=int(options.get("seed", 0)),
    )


_FORCINGS: dict[str, tuple[Callable[[Variant], Forcing], str]] = {
    "ollama": (_ollama_forcing, OLLAMA_METHOD),
    "openai": (_openai_forcing, OPENAI_METHOD),
}
"""For each backend whose token fidelity is `"logprobs"`: how a variant's forcing is made, and the
method text (`{k}` for its top-k)."""


def logprobs_forcing(variant: Variant) -> tuple[Forcing, str]:
    """The forcing for one variant of a `"logprobs"` backend, and its method text (`{k}` for its top-k).

    Raises:
        BackendError: The variant's backend has no top-k forcing.
    """
    found = _FORCINGS.get(variant.backend)
    if found is None:
        raise BackendError(f"no top-k forcing for the {variant.backend} backend")
    make, method = found
    return make(variant), method
