"""Drafts from text already seen (prompt lookup decoding): the tokens that followed the sequence's
last few tokens where they last occurred in its prompt, in a given answer, or in what it wrote.

An extraction answer mostly copies: its keys and punctuation are those of the few-shot answers in
the prompt, its values spans of the case text, and a candidate's answer the reference's. The slot
scheduler (`_slots.py`) sends such a draft with the sequence's next token and keeps each drafted
token only where the model's own greedy choice under the grammar is that token, as speculative
decoding does: the answer is the one decoding gives (up to llama.cpp's batch-shape rounding), in
fewer steps. Measured in `benchmarks/lookup.py` (docs/performance.md, "Drafts from the prompt").
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["LookupIndex"]

NGRAM_MAX = 3
"""The longest run of last tokens looked up; shorter runs are tried after it, down to one token."""

LOOKUP_DRAFT = {1: 1, 2: 2, 3: 4}
"""Tokens drafted at most, by the length of the run found: a longer match predicts a longer copy.
Every drafted token costs a logits row, so a wrong one costs what a decoded token's output layer
does. Chosen by a simulation on 156 reference answers of `restaurants` (their prompts' lookups, no
model) and the per-token costs `benchmarks/lookup.py` measured (6.0 ms a row, 7.3 ms a step, F16 at
4 slots): 8 tokens at any match kept 58% of those drafted (1.20x estimated, 1.19x measured on 24
cases), 4 kept 68% (1.30x), 2 kept 76% (1.30x); these lengths kept 73% (1.36x)."""


class LookupIndex:
    """Where each run of 1 to `NGRAM_MAX` tokens last occurred, in a given answer and in the context.

    Args:
        context: The sequence's context so far (its prompt), which `append` extends as it writes.
        given: A given answer (the reference's, for a candidate that left it): looked up first, so
            that the candidate comes back to it where it can.
    """

    def __init__(self, context: Sequence[int], given: Sequence[int] = ()) -> None:
        self._texts: list[list[int]] = [[], []]
        self._next: list[dict[tuple[int, ...], int]] = [{}, {}]
        """Per text (the given answer, the context): a run of tokens -> the position of the token
        that followed it there last."""
        for which, tokens in enumerate((given, context)):
            for token in tokens:
                self._add(which, token)

    def append(self, token: int) -> None:
        """Extend the context by `token` (one the sequence wrote)."""
        self._add(1, token)

    def _add(self, which: int, token: int) -> None:
        text, runs = self._texts[which], self._next[which]
        for n in range(1, min(NGRAM_MAX, len(text)) + 1):
            runs[tuple(text[-n:])] = len(text)
        text.append(token)

    def draft(self, limit: int) -> list[int]:
        """The tokens that followed the longest run of the context's last tokens found earlier, in the
        given answer first (an empty list when none is): at most `LOOKUP_DRAFT[run length]`, and at
        most `limit`."""
        context = self._texts[1]
        for n in range(min(NGRAM_MAX, len(context)), 0, -1):
            run = tuple(context[-n:])
            for text, runs in zip(self._texts, self._next, strict=True):
                start = runs.get(run)
                if start is not None:
                    return text[start : start + max(min(limit, LOOKUP_DRAFT[n]), 0)]
        return []
