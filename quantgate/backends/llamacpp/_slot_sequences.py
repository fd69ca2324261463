"""What the slot scheduler (`quantgate.backends.llamacpp._slots`) works on: the model context it decodes in
(`BatchContext`, so that it can be tested against a fake model), and what it keeps per request, per
running sequence and per batch.

A request may come with a given answer to verify (`SlotRequest.answer`: the reference's answer
to the same prompt, as tokens): its tokens are read after the prompt, in the prompt's batches,
with logits after each, and the sequence takes at each position the token it would have chosen
itself (`SlotScheduler` in `_slots.py`); at the first position where that is not the given token,
the rest of the answer is dropped and the sequence decodes from there as usual.
"""

from __future__ import annotations

import codecs
import queue
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from quantgate.backends.llamacpp._grammar import SequenceGrammar
from quantgate.backends.llamacpp._greedy import Generation
from quantgate.backends.llamacpp._logprobs import TokenTop
from quantgate.backends.llamacpp._lookup import LookupIndex


class BatchContext(Protocol):
    """What the scheduler needs from a model context holding several sequences."""

    n_ctx: int
    n_batch: int

    def decode(self, tokens: Sequence[int], positions: Sequence[int], seqs: Sequence[int],
               logits: Sequence[bool]) -> None:  # fmt: skip
        """Decode one batch. Raises RuntimeError on failure."""
        ...

    def logits(self, index: int) -> np.ndarray[Any, Any]:
        """The logits after batch entry `index` of the last decode (valid until the next)."""
        ...

    def copy_sequence(self, src: int, dst: int) -> None:
        """Make `dst` share every cell of `src`."""
        ...

    def remove(self, seq: int, start: int = 0) -> None:
        """Drop `seq`'s cells from position `start` on."""
        ...

    def is_end(self, token: int) -> bool:
        """Whether `token` ends generation (end of generation / end of turn)."""
        ...

    def piece(self, token: int) -> bytes:
        """The bytes of `token`."""
        ...

    def grammar(self, text: str) -> SequenceGrammar:
        """A fresh state of the grammar `text`."""
        ...


@dataclass(eq=False, kw_only=True)
class SlotRequest:
    """One call: its prompt's tokens, grammar, token limit, counts, and where its text goes."""

    tokens: list[int]
    grammar: str | None
    max_tokens: int
    stats: Generation
    answer: list[int] | None = None
    """A given answer to verify (at most `max_tokens` tokens), or None: decode."""
    answer_top: list[TokenTop] | None = None
    """The given answer's top log-probabilities, one list per token (its model's, when kept):
    the verifying rows are compared with them (`Generation.fidelity`)."""
    lookup: bool = False
    """Draft from text already seen (`_lookup.LookupIndex`), checked against the model's choices."""
    out: queue.Queue[Any] = field(default_factory=queue.Queue)
    cancelled: bool = False


@dataclass(eq=False, kw_only=True)
class SlotSequence:
    """A request in a slot: what is left to read, where it stands, its grammar and text decoder."""

    seq: int
    request: SlotRequest
    pending: list[int]
    """Tokens still to read: the prompt's after the shared prefix, then the given answer's."""
    pos: int
    shared: int
    grammar: SequenceGrammar | None
    text: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace"))
    next_token: int | None = None
    draft: list[int] = field(default_factory=list)
    """Tokens decoded with `next_token` and checked against the model's choices: those the grammar
    forces after it (the grammar advanced over them), or those of a lookup (`lookup_draft`)."""
    lookup: LookupIndex | None = None
    """The request's lookup index (prompt, given answer, what was written), when it asks for drafts."""
    lookup_draft: bool = False
    """The draft comes from `lookup`: the grammar was not advanced over it."""
    skip: int = 0
    """Entries of the current batch that belong to a dropped draft or given answer."""
    verifying: bool = False
    """The given answer is being read: each logits row is checked against its next token."""
    batch_end: int = 0
    """The position after this sequence's last entry in the current batch."""

    @property
    def reserved(self) -> int:
        """KV cells this sequence may still come to hold beyond the shared prefix."""
        return len(self.request.tokens) - self.shared + self.request.max_tokens

    def wants(self, chunk: list[int]) -> list[bool]:
        """Which entries of `chunk` (just taken from `pending`, to be read from `pos` on) need logits:
        the prompt's last token, and, while a given answer is read, every token of it (each row is
        the choice after that token)."""
        if self.verifying:
            last_prompt = len(self.request.tokens) - 1
            return [self.pos + i >= last_prompt for i in range(len(chunk))]
        return [False] * (len(chunk) - 1) + [not self.pending]


@dataclass
class SlotBatch:
    """The entries of one decode, with the sequence each belongs to."""

    tokens: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    wants: list[bool] = field(default_factory=list)
    owners: list[SlotSequence] = field(default_factory=list)

    def add(self, sequence: SlotSequence, chunk: list[int], wants: list[bool]) -> None:
        """Append `chunk` at the sequence's next positions."""
        self.tokens += chunk
        self.positions += range(sequence.pos, sequence.pos + len(chunk))
        self.seqs += [sequence.seq] * len(chunk)
        self.wants += wants
        self.owners += [sequence] * len(chunk)
        sequence.batch_end = sequence.pos + len(chunk)
