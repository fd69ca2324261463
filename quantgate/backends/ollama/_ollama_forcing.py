"""Teacher forcing through Ollama's API, from the top-k log-probabilities it returns.

Ollama cannot score a given text: it only returns log-probabilities (`logprobs`,
`top_logprobs`) for the tokens it generates. We still obtain a model's next-token
distribution at every position of the reference's output by *resumed greedy generation*:

1. Ask for the case's first-attempt messages at temperature 0 and read the stream, one
   generated token at a time, each with its top-k list.
2. While the generated token is the target's next token, the model saw exactly the
   reference's history: keep its top-k list and go on.
3. At the first position where it picks another token, keep that position's top-k list
   (its history was still the reference's), close the stream, and ask again with the
   target's text so far as a final, unfinished assistant message, which Ollama's chat
   templates continue rather than close (`$last` in the Gemma 3 and Llama 3 templates).

A model that agrees with the reference costs one request per case; each disagreement costs
one more, and the server's prompt cache keeps the shared prefix. The server re-tokenizes the
prefilled text, which may split it differently from the generated tokens at rare places.

For the reference itself (`follow_text`) the target is its recorded output, a string: the
next token is the generated one when the output continues with it, else the most likely
token of the top-k list that the output continues with. When none does (the output was
generated under the schema's grammar, which can force a token the free model finds
unlikely), the walk advances by one character: the position's top-k list is kept, since the
history was the reference's. For a variant (`follow_tokens`) the target is the token
sequence the reference's walk produced, so positions line up one to one.

Where a model ends its answer before the target does, that position has no top-k list (Ollama
returns none for the end of text): it is left out, and the walk goes on past it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import httpx
from langchain_core.messages import BaseMessage

from quantgate.backends import BackendError
from quantgate.backends._backend_options import DEFAULT_TOP_LOGPROBS, options_of
from quantgate.backends._forcing import ForcedPositions, LogprobsForcing, TopLogprobs, Walk, chat_messages
from quantgate.backends.ollama._ollama_chat import ollama_error_text
from quantgate.backends.ollama._ollama_options import OllamaOptions
from quantgate.inputs._variants import Variant


class OllamaForcing:
    """Resumed greedy generation against one Ollama model (see the module docstring)."""

    def __init__(
        self,
        *,
        host: str,
        model: str,
        options: dict[str, Any],
        top_logprobs: int = DEFAULT_TOP_LOGPROBS,
        timeout_s: float = 300.0,
    ) -> None:
        """Connect to a server.

        Args:
            host: The server URL.
            model: The model tag.
            options: Ollama options (`num_ctx`, `seed`); temperature is set to 0 here.
            top_logprobs: How many most likely tokens to ask for at each position.
            timeout_s: Per-request timeout.
        """
        from ollama import Client

        self.host = host
        self.model = model
        self.options = {**options, "temperature": 0.0}
        self.top_logprobs = top_logprobs
        self.client = Client(host=host, timeout=timeout_s)

    def follow_text(self, messages: Sequence[BaseMessage], target: str) -> ForcedPositions:
        """The model's top-k lists along `target` (the reference's own output)."""
        return self._follow(messages, Walk(target=target, tokens=None))

    def follow_tokens(self, messages: Sequence[BaseMessage], tokens: Sequence[str]) -> ForcedPositions:
        """The model's top-k lists along the reference's token sequence."""
        return self._follow(messages, Walk(target="".join(tokens), tokens=tokens))

    def _follow(self, messages: Sequence[BaseMessage], walk: Walk) -> ForcedPositions:
        base = chat_messages(messages)
        while not walk.finished():
            walk.requests += 1
            prefix = walk.prefix
            prefill = [{"role": "assistant", "content": prefix}] if prefix else []
            budget = len(walk.tokens) - len(walk.chosen) if walk.tokens is not None else len(walk.target)
            if self._resume(self._stream([*base, *prefill], budget), walk) == "ended":
                walk.skip()
        return walk.result()

    def _resume(self, stream: Iterator[Any], walk: Walk) -> str:
        """Read one answer: `done` (target covered), `diverged` or `ended` (before the target)."""
        try:
            for chunk in stream:
                for entry in chunk.logprobs or []:
                    top = _top(entry)
                    expected = walk.expected(entry.token, top)
                    walk.chosen.append(expected)
                    walk.top.append(top)
                    if entry.token != expected:
                        return "diverged"
                    if walk.finished():
                        return "done"
                if chunk.done:
                    return "ended"
            return "ended"
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()  # stop the server generating past a divergence

    def _stream(self, messages: list[dict[str, str]], budget: int) -> Iterator[Any]:
        try:
            stream = self.client.chat(
                model=self.model,
                messages=messages,
                stream=True,
                logprobs=True,
                top_logprobs=self.top_logprobs,
                options={**self.options, "num_predict": max(budget, 1)},
            )
            yield from _checked(stream, self.host, self.model)
        except httpx.HTTPError as exc:
            raise BackendError(f"Ollama server at {self.host} ({self.model}): {exc}") from exc


def _checked(stream: Iterator[Any], host: str, model: str) -> Iterator[Any]:
    from ollama import ResponseError

    try:
        for chunk in stream:
            if not chunk.done and chunk.message.content and not chunk.logprobs:
                raise BackendError(
                    f"Ollama server at {host} returned no log-probabilities for {model}; "
                    "it needs an Ollama release whose API has logprobs (late 2025 or newer)"
                )
            yield chunk
    except ResponseError as exc:
        raise BackendError(
            f"Ollama server at {host} ({model}) answered {exc.status_code}: {ollama_error_text(exc)}"
        ) from exc


def _top(entry: Any) -> TopLogprobs:
    listed = entry.top_logprobs or []
    if not listed:
        return {entry.token: entry.logprob}
    top: TopLogprobs = {}
    for item in listed:
        top[item.token] = max(item.logprob, top.get(item.token, float("-inf")))
    return top


OLLAMA_METHOD = (
    "resumed greedy generation over Ollama's chat API with logprobs: each model follows the "
    "reference's output from the case's first-attempt messages (prefilling the output so far after "
    "each disagreement); per output position a lower bound of KL(reference || variant) from the two "
    "top-{k} lists (tokens outside both merged into one bucket, nats) and top-1 agreement, pooled "
    "over positions"
)


def ollama_forcing(variant: Variant) -> OllamaForcing:
    """The forcing of an Ollama variant: its server, model and typed options."""
    from quantgate.backends.ollama._ollama import ollama_host

    options = options_of(variant, OllamaOptions)
    return OllamaForcing(
        host=ollama_host(variant),
        model=variant.model,
        options={"num_ctx": options.num_ctx, "seed": options.seed},
        top_logprobs=options.top_logprobs,
        timeout_s=options.timeout_s,
    )


LOGPROBS_FORCING = LogprobsForcing(make=ollama_forcing, method=OLLAMA_METHOD)
"""The Ollama backend's capability for token fidelity (and any backend's that speaks Ollama's API)."""
