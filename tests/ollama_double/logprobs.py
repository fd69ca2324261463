"""The log-probabilities the Ollama TEST DOUBLE returns with a generated token (`logprobs`,
`top_logprobs`)."""

from __future__ import annotations

import codecs
from typing import Any

import numpy as np
from scipy.special import log_softmax

from quantgate.backends.llamacpp._engine import EmbeddedEngine
from quantgate.backends.llamacpp._greedy import Step


def logprob_entry(engine: EmbeddedEngine, step: Step, top: int) -> dict[str, Any]:
    """Ollama's logprob entry for one generated token, with its `top` most likely tokens."""
    assert step.logits is not None
    logprobs = log_softmax(step.logits.astype(np.float64))
    best = np.argpartition(-logprobs, top)[:top] if top < len(logprobs) else np.arange(len(logprobs))
    best = best[np.argsort(-logprobs[best])]

    def text(token: int) -> str:
        return codecs.decode(engine.llama.detokenize([int(token)]), "utf-8", errors="replace")

    entry: dict[str, Any] = {"token": text(step.token), "logprob": float(logprobs[step.token])}
    if top:
        entry["top_logprobs"] = [{"token": text(t), "logprob": float(logprobs[t])} for t in best]
    return entry
