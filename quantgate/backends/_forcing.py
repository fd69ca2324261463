"""What token fidelity's forcings share: a model made to follow a target on its runtime gives its top-k
lists along it (`Forcing`, `ForcedPositions`), and how a `"logprobs"` backend declares its forcing
(`LogprobsForcing`, its `BackendCapabilities.logprobs_forcing`). Each backend's forcing is in its folder
(`ollama/_ollama_forcing.py`, `openai/_openai_forcing.py`, `llamacpp/_embedded_forcing.py`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from quantgate.inputs._variants import Variant

__all__ = [
    "ForcedPositions",
    "Forcing",
    "LogprobsForcing",
    "TopLogprobs",
    "Walk",
    "chat_messages",
    "same_prompt",
]

_ROLES = ((SystemMessage, "system"), (HumanMessage, "user"), (AIMessage, "assistant"))

TopLogprobs = dict[str, float]
"""One position: token text to natural-log probability, the server's k most likely tokens."""


@dataclass(frozen=True, kw_only=True)
class ForcedPositions:
    """What one model predicted at each position of a target.

    Attributes:
        tokens: The target's tokens, as far as the walk got.
        top: The model's top-k list at each of those positions; None where the model ended
            its answer there (Ollama returns no log-probabilities for the end of text).
        requests: Chat requests made.
    """

    tokens: tuple[str, ...]
    top: tuple[TopLogprobs | None, ...]
    requests: int


class Forcing(Protocol):
    """What follows a target on a server and gives its top-k lists (`OllamaForcing`, `OpenAIForcing`)."""

    top_logprobs: int
    """How many most likely tokens it asks for at each position."""

    def follow_text(self, messages: Sequence[BaseMessage], target: str) -> ForcedPositions:
        """The model's top-k lists along the reference's own output."""
        ...

    def follow_tokens(self, messages: Sequence[BaseMessage], tokens: Sequence[str]) -> ForcedPositions:
        """The model's top-k lists along the reference's token sequence."""
        ...


@dataclass(kw_only=True)
class Walk:
    """A walk along a target: the tokens chosen so far and each position's top-k list."""

    target: str
    tokens: Sequence[str] | None
    chosen: list[str] = field(default_factory=list)
    top: list[TopLogprobs | None] = field(default_factory=list)
    requests: int = 0

    @property
    def prefix(self) -> str:
        return "".join(self.chosen)

    def finished(self) -> bool:
        if self.tokens is not None:
            return len(self.chosen) >= len(self.tokens)
        return self.prefix == self.target

    def expected(self, generated: str, top: TopLogprobs) -> str:
        """The target's token at this position."""
        if self.tokens is not None:
            return self.tokens[len(self.chosen)]
        remaining = self.target[len(self.prefix) :]
        if generated and remaining.startswith(generated):
            return generated
        candidates = [t for t in top if t and remaining.startswith(t)]
        return max(candidates, key=top.__getitem__) if candidates else remaining[0]

    def skip(self) -> None:
        """Step over a position the model ended its answer at (no top-k list)."""
        upcoming = self.tokens[len(self.chosen)] if self.tokens is not None else self.target[len(self.prefix)]
        self.chosen.append(upcoming)
        self.top.append(None)

    def result(self) -> ForcedPositions:
        return ForcedPositions(tokens=tuple(self.chosen), top=tuple(self.top), requests=self.requests)


def chat_messages(messages: Sequence[BaseMessage]) -> list[dict[str, str]]:
    """LangChain messages as chat API messages (role and text), as Ollama and OpenAI-compatible
    servers take them."""
    converted = []
    for message in messages:
        role = next((name for kind, name in _ROLES if isinstance(message, kind)), None)
        if role is None:
            raise ValueError(f"no chat role for a {type(message).__name__}")
        converted.append({"role": role, "content": message.text})
    return converted


def same_prompt(variant: Variant, reference: Variant) -> str | None:
    """No mismatch: a variant of the backend reads the prompt the reference reads."""
    return None


def always_followable(forcing: Forcing, messages: Sequence[BaseMessage]) -> str | None:
    """No problem: the backend's forcings follow a target after any messages."""
    return None


@dataclass(frozen=True, kw_only=True)
class LogprobsForcing:
    """How a `"logprobs"` backend's variants are made to follow the reference's output: what a backend
    declares as `BackendCapabilities.logprobs_forcing` to take part in token fidelity.

    Attributes:
        make: The forcing of one variant (its server, model and options); raises `BackendError` for
            options it cannot take.
        method: The method text its token fidelity records (`{k}` for its top-k).
        prompt_mismatch: Why a variant and the reference read different prompts through it (None
            when they read the same), asked before measuring; by default they always do.
        unfollowable: Why a forcing it made cannot follow a target after these messages (asked
            once, before measuring; an OpenAI-compatible server whose prompt text is unknown); by
            default it always can.
        pair_member: The forcing of a runtime pair's member: the variant made to read the prompt
            text quantgate renders (the embedded base's), one token at a time; raises
            `BackendError` saying why a variant cannot be. None: the backend's variants cannot be
            a pair's member.
    """

    make: Callable[[Variant], Forcing]
    method: str
    prompt_mismatch: Callable[[Variant, Variant], str | None] = same_prompt
    unfollowable: Callable[[Forcing, Sequence[BaseMessage]], str | None] = always_followable
    pair_member: Callable[[Variant], Forcing] | None = None
