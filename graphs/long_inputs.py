"""A case's first prompt, its text cut to what fits in the model's context window (`prompt_messages`):
the extraction graph's `prepare` node builds it, and so does everything that must read the prompt a
case's first attempt reads (token fidelity, the warm-up, the load test)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from langchain_core.messages import BaseMessage, HumanMessage

__all__ = ["CUT_MARK", "PromptBudget", "prompt_messages"]


class PromptBudget(Protocol):
    """What the cut needs of the extraction context (`graphs.extraction.ExtractionContext`)."""

    @property
    def prompt_prefix(self) -> Sequence[BaseMessage]:
        """Instructions and few-shot examples, the same for every case."""
        ...

    @property
    def input_budget(self) -> int | None:
        """Tokens left for a case's text in the context window; None when the window is unknown."""
        ...

    def tokens(self, text: str) -> int:
        """Token count of `text`."""
        ...


def prompt_messages(ctx: PromptBudget, text: str) -> tuple[list[BaseMessage], int]:
    """The first attempt's messages for a case, its text cut to what fits in the context.

    A text longer than the input budget keeps its beginning (two thirds of the budget) and
    its end (the rest), joined by `CUT_MARK`: what a record needs is often at either end of
    a document (the parties and dates at the top, totals and signatures at the bottom).

    Args:
        ctx: The extraction context (prompt prefix, token counter, input budget).
        text: The case text.

    Returns:
        The messages (prompt prefix, then the possibly cut text) and the number of input
        tokens dropped by the cut (0 when the text fits or the window is unknown).
    """
    budget = ctx.input_budget
    dropped = 0
    if budget is not None:
        size = ctx.tokens(text)
        if size > budget:
            head_budget = budget * 2 // 3
            head = _fitting(ctx, text, head_budget, from_end=False)
            tail_budget = max(budget - head_budget - ctx.tokens(CUT_MARK), 0)
            tail = _fitting(ctx, text[len(head) :], tail_budget, from_end=True)
            dropped = max(size - (ctx.tokens(head) if head else 0) - (ctx.tokens(tail) if tail else 0), 0)
            text = f"{head}{CUT_MARK}{tail}"
    return [*ctx.prompt_prefix, HumanMessage(content=text)], dropped


CUT_MARK = "\n[...]\n"
"""What stands for the middle of a text cut to fit the context window."""


def _fitting(ctx: PromptBudget, text: str, budget: int, *, from_end: bool) -> str:
    """The longest start (or end) of `text`, by a shrinking estimate, that fits in `budget` tokens."""
    keep = int(len(text) * budget / max(ctx.tokens(text), 1))

    def part(n: int) -> str:
        return (text[len(text) - n :] if n else "") if from_end else text[:n]

    while keep and ctx.tokens(part(keep)) > budget:
        keep = int(keep * 0.95)
    return part(min(keep, len(text)))
