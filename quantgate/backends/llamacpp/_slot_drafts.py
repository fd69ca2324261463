"""Drafts in the slot scheduler (`_slots.SlotScheduler`): tokens decoded in one batch with a
sequence's next token, each kept only where the model's own greedy choice is that token, as in
speculative decoding, so that the answer is the one token-by-token decoding gives (up to llama.cpp's
batch-shape rounding, see docs/performance.md); the rest of a draft is dropped at the first
disagreement (its KV cells removed, its batch entries skipped).

Two kinds:
- With `fast_forward`, the tokens a sequence's grammar forces after its chosen token (JSON keys and
  punctuation, which llguidance can name); the grammar is advanced over them and rolled back at a
  disagreement.
- With a request's `lookup`, the tokens that followed the sequence's last few tokens in its prompt,
  its given answer or what it wrote (`_lookup.LookupIndex`); the grammar is not advanced over them,
  each is checked by the grammar's own choice as it is read.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from quantgate.backends.llamacpp._slot_sequences import BatchContext, SlotSequence

MAX_DRAFT = 32
"""Forced tokens drafted at most after one chosen token (a logits row each)."""


class DraftChecks:
    """The slot scheduler's drafts: what to draft after a chosen token, and how each row checks it."""

    context: BatchContext
    fast_forward: bool

    def _choose(self, sequence: SlotSequence, logits: np.ndarray[Any, Any], token: int | None = None) -> None:
        raise NotImplementedError

    def _emit(self, sequence: SlotSequence, token: int, logits: np.ndarray[Any, Any]) -> None:
        raise NotImplementedError

    def _finish(
        self, sequence: SlotSequence, *, reason: str | None = None, error: Exception | None = None
    ) -> None:
        raise NotImplementedError

    def _draft(self, sequence: SlotSequence) -> list[int]:
        """With `fast_forward`, the tokens the grammar forces next (accepted by it), within the token
        limit and `MAX_DRAFT`; without it, when the request asks for it, a draft from text already seen
        (the grammar not advanced). The two kinds are not combined."""
        left = sequence.request.max_tokens - sequence.request.stats.output_tokens
        sequence.lookup_draft = False
        if not self.fast_forward or sequence.grammar is None:
            if sequence.lookup is None:
                return []
            sequence.lookup_draft = True
            return sequence.lookup.draft(left)
        forced = sequence.grammar.fast_forward()
        keep = min(MAX_DRAFT, left)
        if len(forced) > keep:
            sequence.grammar.rollback(len(forced) - keep)
        return forced[: max(keep, 0)]

    def _fit_draft(self, sequence: SlotSequence, room: int) -> None:
        """Cut the sequence's draft to `room` entries (the grammar rolled back to match)."""
        excess = len(sequence.draft) - max(room, 0)
        if excess <= 0:
            return
        if not sequence.lookup_draft and sequence.grammar is not None:
            sequence.grammar.rollback(excess)
        del sequence.draft[-excess:]

    def _check_draft(self, sequence: SlotSequence, logits: np.ndarray[Any, Any]) -> None:
        """After one entry of a drafted chunk: keep the next draft token if the model chose it too.

        The model's unconstrained argmax equal to the forced token is what greedy decoding
        would have chosen (the grammar allows it). At the first disagreement the rest of the
        draft is dropped (grammar rolled back, its KV cells removed, its batch entries
        skipped) and the token is chosen from these logits as usual.
        """
        if sequence.lookup_draft:
            return self._check_lookup(sequence, logits)
        expected = sequence.draft[0]
        if int(np.argmax(logits)) == expected:
            del sequence.draft[0]
            sequence.request.stats.forced_tokens += 1
            self._emit(sequence, expected, logits)
            if sequence.request.stats.output_tokens >= sequence.request.max_tokens:
                self._finish(sequence, reason="length")
            return
        assert sequence.grammar is not None  # only a grammar drafts
        sequence.grammar.rollback(len(sequence.draft))
        self.context.remove(sequence.seq, sequence.pos)
        sequence.skip, sequence.draft = len(sequence.draft), []
        self._choose(sequence, logits)

    def _check_lookup(self, sequence: SlotSequence, logits: np.ndarray[Any, Any]) -> None:
        """After one entry of a chunk drafted from text already seen: keep the next drafted token if
        the sequence chooses it (its grammar's greedy choice, as in `_choose`); else drop the rest of
        the draft (its KV cells removed, its batch entries skipped) and take the choice."""
        stats = sequence.request.stats
        token = sequence.grammar.choose(logits) if sequence.grammar is not None else int(np.argmax(logits))
        if token == sequence.draft[0] and not self.context.is_end(token):
            if sequence.grammar is not None:
                sequence.grammar.accept(token)
            del sequence.draft[0]
            stats.lookup_kept += 1
            self._emit(sequence, token, logits)
            if stats.output_tokens >= sequence.request.max_tokens:
                self._finish(sequence, reason="length")
            return
        self.context.remove(sequence.seq, sequence.pos)
        sequence.skip, sequence.draft = len(sequence.draft), []
        self._choose(sequence, logits, token=token)
