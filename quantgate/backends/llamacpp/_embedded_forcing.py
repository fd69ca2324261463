"""Teacher forcing on an embedded llama.cpp model, as a `Forcing`: its top-k lists along a target.

The model file is loaded in this process (`EmbeddedEngine`); the prompt is the messages rendered
as the embedded backend renders them (`render_prompt`), the target is read by teacher forcing
(`forced_logits`), and each position's full logits become a top-k list: the log-softmax over the
whole vocabulary, cut to the k most likely tokens. Tokens are spelled as llama-cpp-python's
OpenAI-compatible server spells them in `/v1/completions` log-probabilities (each token detokenized
alone, invalid UTF-8 dropped), so the lists compare with a server's (`OpenAIForcing`) token by token.

This is what `measure_ollama_token_fidelity` compares with a server's lists: the same model file on
the embedded backend and behind a server (`quantgate.evaluate.token_fidelity._pair_fidelity`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from langchain_core.messages import BaseMessage
from scipy.special import log_softmax

from quantgate.backends import BackendError
from quantgate.backends._backend_options import DEFAULT_TOP_LOGPROBS
from quantgate.backends._base_prompt import render_prompt
from quantgate.backends._forcing import ForcedPositions, TopLogprobs
from quantgate.backends.llamacpp._teacher_forcing import DEFAULT_ROWS_PER_BATCH, forced_logits

__all__ = ["EmbeddedForcing", "top_logprobs"]


def top_logprobs(logits: np.ndarray[Any, Any], k: int, spell: Callable[[int], str]) -> TopLogprobs:
    """The k most likely tokens of one position's full logits, with their natural-log probabilities.

    Args:
        logits: One row of raw logits over the whole vocabulary.
        k: How many tokens to keep.
        spell: A token id's text.

    Two tokens spelled alike (byte tokens that are no whole UTF-8 character) keep the larger
    log-probability, as the forcings of servers merge them.
    """
    logprobs = log_softmax(logits.astype(np.float64))
    count = min(k, logprobs.shape[0])
    chosen = np.argpartition(-logprobs, count - 1)[:count]
    top: TopLogprobs = {}
    for token in sorted(chosen.tolist(), key=lambda t: -logprobs[t]):
        text = spell(int(token))
        top[text] = max(float(logprobs[token]), top.get(text, float("-inf")))
    return top


class EmbeddedForcing:
    """Top-k lists of an embedded llama.cpp model along a target (see the module docstring)."""

    def __init__(
        self,
        *,
        llama: Any,
        top_logprobs: int = DEFAULT_TOP_LOGPROBS,
        render: Callable[[Sequence[BaseMessage]], str] = render_prompt,
        rows_per_batch: int = DEFAULT_ROWS_PER_BATCH,
    ) -> None:
        """Wrap a loaded model.

        Args:
            llama: A loaded `llama_cpp.Llama` (`EmbeddedEngine.llama`); the caller frees it.
            top_logprobs: How many most likely tokens to keep at each position.
            render: The prompt text of messages (the embedded backend's).
            rows_per_batch: See `forced_logits`.
        """
        if top_logprobs < 1:
            raise ValueError(f"top_logprobs must be at least 1, got {top_logprobs}")
        self.llama = llama
        self.top_logprobs = top_logprobs
        self.render = render
        self.rows_per_batch = rows_per_batch
        self._spelled: dict[int, str] = {}

    def spell(self, token: int) -> str:
        """A token's text as llama-cpp-python's server gives it (alone, invalid UTF-8 dropped)."""
        text = self._spelled.get(token)
        if text is None:
            text = self.llama.detokenize([token]).decode("utf-8", errors="ignore")
            self._spelled[token] = text
        return text

    def follow_text(self, messages: Sequence[BaseMessage], target: str) -> ForcedPositions:
        """The model's top-k lists along `target`, tokenized canonically after the rendered prompt.

        Raises:
            BackendError: The prompt and target do not fit in the model's context.
        """
        prompt_tokens = self.llama.tokenize(self.render(messages).encode("utf-8"))
        target_tokens = self.llama.tokenize(target.encode("utf-8"), add_bos=False)
        try:
            logits = forced_logits(
                self.llama, prompt_tokens, target_tokens, rows_per_batch=self.rows_per_batch
            )
        except ValueError as exc:
            raise BackendError(f"embedded teacher forcing: {exc}") from exc
        return ForcedPositions(
            tokens=tuple(self.spell(token) for token in target_tokens),
            top=tuple(top_logprobs(row, self.top_logprobs, self.spell) for row in logits),
            requests=0,
        )

    def follow_tokens(self, messages: Sequence[BaseMessage], tokens: Sequence[str]) -> ForcedPositions:
        """The model's top-k lists along a token sequence, which must be this tokenizer's own split
        of its text.

        Raises:
            BackendError: The tokens are not how this model tokenizes their text, or do not fit.
        """
        followed = self.follow_text(messages, "".join(tokens))
        if followed.tokens != tuple(tokens):
            raise BackendError(
                "embedded teacher forcing: the target's tokens are not this model's split of its text"
            )
        return followed
