"""Parallel sequences (slots) in one llama.cpp context, with continuous batching.

`SlotScheduler` decodes up to `slots` requests at once in one model copy, as
`llama-server -np N` does and as Ollama does with `OLLAMA_NUM_PARALLEL`. Callers in any
thread call `generate`, which streams the request's tokens as they come. One decoder thread
owns the context; every step it builds one unified batch holding the next token of each
generating sequence plus chunks of the prompts still being read, decodes it, and picks the
next token of each sequence by its own grammar state. A sequence that finishes frees its
slot at once and a waiting request takes it on the next step.

With `fast_forward`, the tokens a sequence's grammar forces go into the same batch as a draft,
and a request may ask for drafts from text already seen (`lookup`); either draft is checked as in
speculative decoding (`_slot_drafts.DraftChecks`).

The shared prompt prefix (the system text and few-shot examples) is read once: the KV of
the first prompt is kept in a sequence of its own (the prefix sequence), shrunk to the
longest prefix common with later prompts, and copied into each new sequence's slot
(`llama_memory_seq_cp`, which shares the cells rather than copying them).

Admission keeps to the KV budget: a request is admitted when its prompt (past the shared
prefix) and its `max_tokens` fit next to what the running sequences have reserved.

The context is reached through the small `BatchContext` protocol (in `_slot_sequences.py`) so that
the scheduler can be tested against a fake model; `batch.LlamaBatchContext` is the real one.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Generator, Sequence
from typing import Any

import numpy as np

from quantgate.backends.llamacpp._greedy import Generation, common_prefix
from quantgate.backends.llamacpp._logprobs import ForcedFidelity, TokenTop, aligned, top_logprobs
from quantgate.backends.llamacpp._lookup import LookupIndex
from quantgate.backends.llamacpp._slot_drafts import DraftChecks
from quantgate.backends.llamacpp._slot_sequences import BatchContext, SlotBatch, SlotRequest, SlotSequence

_END = object()


class SlotScheduler(DraftChecks):
    """Decodes up to `slots` requests at once in one context; thread-safe `generate`.

    Sequence ids 0..slots-1 are the slots and `slots` is the prefix sequence, so the
    context needs `slots + 1` sequences.
    """

    def __init__(self, context: BatchContext, slots: int, *, fast_forward: bool = False) -> None:
        if slots < 1:
            raise ValueError(f"slots must be at least 1, got {slots}")
        self.context = context
        self.slots = slots
        self.fast_forward = fast_forward
        """Decode the tokens the grammar forces after each chosen token in the same batch (a draft)."""
        self._prefix_seq = slots
        self._prefix: list[int] = []
        self._donor: SlotSequence | None = None
        self._waiting: deque[SlotRequest] = deque()
        self._running: dict[int, SlotSequence] = {}
        self._wake = threading.Condition()
        self._closed = False
        self.steps = 0
        self.peak_running = 0
        self._thread = threading.Thread(target=self._loop, name="quantgate-slots", daemon=True)
        self._thread.start()

    def generate(
        self,
        tokens: list[int],
        grammar: str | None,
        max_tokens: int,
        stats: Generation,
        *,
        answer: Sequence[int] | None = None,
        answer_top: Sequence[TokenTop] | None = None,
        lookup: bool = False,
    ) -> Generator[str, None, None]:
        """Queue a request and yield the text of each generated token as it is decoded.

        Args:
            tokens: The prompt's tokens (BOS included).
            grammar: Grammar text for `BatchContext.grammar`, or None (unconstrained).
            max_tokens: Generation limit (finish reason `length`).
            stats: Receives token counts, the finish reason, grammar fallbacks and, with `answer`,
                how many of its tokens were verified (`Generation.verified_tokens`).
            answer: A given answer to verify (the reference's, as tokens, without BOS): read with
                the prompt at prefill speed; the text yielded is the one decoding gives (the answer's
                tokens as far as the model would have chosen them, then its own).
            answer_top: The answer's top log-probabilities per token (`TokenTop`, its model's):
                each row read is compared with them (`stats.fidelity`); ignored unless they are
                for exactly the answer's tokens.
            lookup: Draft from the prompt, the given answer and what the sequence wrote
                (`_lookup.LookupIndex`), checked as speculative decoding checks a draft; `stats`
                counts the drafted tokens and those kept.

        Raises:
            RuntimeError: The decoder failed or was closed; the message says why.
        """
        if not tokens:
            raise ValueError("the prompt has no tokens")
        stats.prompt_tokens = len(tokens)
        given = None if answer is None else list(answer)[:max_tokens]
        stats.answer_tokens = None if given is None else len(given)
        tops = None if given is None else aligned(given, answer_top)
        stats.fidelity = None if tops is None else ForcedFidelity()
        request = SlotRequest(
            tokens=list(tokens), grammar=grammar, max_tokens=max_tokens, stats=stats, answer=given,
            answer_top=tops, lookup=lookup,
        )  # fmt: skip
        with self._wake:
            if self._closed:
                raise RuntimeError("the slot scheduler is closed")
            self._waiting.append(request)
            self._wake.notify()
        try:
            while (item := request.out.get()) is not _END:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            request.cancelled = True  # a caller that stops reading frees its slot

    def close(self) -> None:
        """Stop the decoder thread; requests still queued or running get an error."""
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join()

    def _loop(self) -> None:
        while True:
            try:
                with self._wake:
                    while not self._closed and not self._waiting and not self._running:
                        self._wake.wait()
                    if self._closed:
                        break
                    self._admit()
                self._step()
            except Exception as exc:  # a failed decode fails the requests in it, not the thread
                self._fail_all(RuntimeError(f"llama.cpp decoding failed: {exc}"))
        closed = RuntimeError("the model was closed while this request was queued or running")
        for sequence in list(self._running.values()):
            self._finish(sequence, error=closed)
        for request in self._waiting:
            request.out.put(closed)

    def _fail_all(self, error: Exception) -> None:
        """Fail every running sequence and forget the prefix (the KV state is not trusted)."""
        for sequence in list(self._running.values()):
            self._running.pop(sequence.seq)
            sequence.request.out.put(error)
            with contextlib.suppress(Exception):  # a broken context must not stop the decoder thread
                self._finish(sequence)
        with contextlib.suppress(Exception):
            self.context.remove(self._prefix_seq)
        self._prefix = []
        self._donor = None

    def _budget_left(self) -> int:
        return self.context.n_ctx - len(self._prefix) - sum(s.reserved for s in self._running.values())

    def _admit(self) -> None:
        """Move waiting requests into free slots while the KV budget allows (FIFO)."""
        while self._waiting and len(self._running) < self.slots and self._donor is None:
            request = self._waiting[0]
            if request.cancelled:
                self._waiting.popleft()
                continue
            shared = min(common_prefix(self._prefix, request.tokens), len(request.tokens) - 1)
            if shared < len(self._prefix):
                self._shrink_prefix(shared)
            need = len(request.tokens) - shared + request.max_tokens
            if self._running and need > self._budget_left():
                return
            self._waiting.popleft()
            seq = min(set(range(self.slots)) - set(self._running))
            if shared:
                self.context.copy_sequence(self._prefix_seq, seq)
            try:
                grammar = self.context.grammar(request.grammar) if request.grammar is not None else None
            except Exception as exc:
                self.context.remove(seq)
                request.out.put(ValueError(f"{exc}"))
                continue
            sequence = SlotSequence(
                seq=seq, request=request, pending=request.tokens[shared:] + (request.answer or []),
                pos=shared, shared=shared, grammar=grammar, verifying=request.answer is not None,
                lookup=LookupIndex(request.tokens, request.answer or ()) if request.lookup else None,
            )  # fmt: skip
            self._running[seq] = sequence
            self.peak_running = max(self.peak_running, len(self._running))
            if not self._prefix:
                self._donor = sequence  # its prompt becomes the prefix once read

    def _shrink_prefix(self, length: int) -> None:
        """Keep only the first `length` tokens of the prefix sequence."""
        self.context.remove(self._prefix_seq, length)
        for sequence in self._running.values():
            sequence.shared = min(sequence.shared, length)
        del self._prefix[length:]

    def _step(self) -> None:
        """One batch: each generating sequence's next token and draft, then prompt chunks; then choose."""
        batch = SlotBatch()
        generating: list[tuple[SlotSequence, int]] = []
        for sequence in list(self._running.values()):
            if sequence.request.cancelled:
                self._finish(sequence)
            elif sequence.next_token is not None:
                generating.append((sequence, sequence.next_token))
        for sequence, token in generating:  # logits after every entry: a draft is checked token by token
            self._fit_draft(sequence, self.context.n_batch // len(generating) - 1)
            chunk = [token, *sequence.draft]
            batch.add(sequence, chunk, [True] * len(chunk))
            if sequence.lookup_draft:
                sequence.request.stats.lookup_drafted += len(sequence.draft)
        for sequence in list(self._running.values()):
            room = self.context.n_batch - len(batch.tokens)
            if room <= 0 or not sequence.pending:
                continue
            chunk, sequence.pending = sequence.pending[:room], sequence.pending[room:]
            batch.add(sequence, chunk, sequence.wants(chunk))
        if not batch.tokens:
            return
        self.context.decode(batch.tokens, batch.positions, batch.seqs, batch.wants)
        self.steps += 1
        for index, (sequence, want) in enumerate(zip(batch.owners, batch.wants, strict=True)):
            if sequence.skip:  # an entry of a draft dropped earlier in this batch
                sequence.skip -= 1
                continue
            sequence.pos += 1
            if not want or self._running.get(sequence.seq) is not sequence:
                continue
            if sequence.verifying:
                self._verify(sequence, self.context.logits(index))
            elif sequence.draft:
                self._check_draft(sequence, self.context.logits(index))
            else:
                self._choose(sequence, self.context.logits(index))

    def _prompt_read(self, sequence: SlotSequence) -> None:
        """The sequence's prompt is read: the donor's becomes the shared prefix."""
        if sequence is self._donor:
            self.context.copy_sequence(sequence.seq, self._prefix_seq)
            self.context.remove(self._prefix_seq, len(sequence.request.tokens) - 1)
            self._prefix = sequence.request.tokens[:-1]
            sequence.shared = len(self._prefix)
            self._donor = None

    def _verify(self, sequence: SlotSequence, logits: np.ndarray[Any, Any]) -> None:
        """A logits row while a given answer is read: keep its next token if the sequence chooses it.

        The row after position `pos - 1` predicts the answer's token `pos - len(prompt)`. The
        token the sequence chooses (its grammar's choice, as in `_choose`) equal to the answer's is
        emitted as decoding would have; at the first other choice, or after the answer's last
        token, the rest of the answer is dropped (its KV cells removed, its entries in this batch
        skipped, those not yet read forgotten) and the choice is made as in decoding.
        """
        request, stats = sequence.request, sequence.request.stats
        at = sequence.pos - len(request.tokens)
        if at == 0:
            self._prompt_read(sequence)
        answer = request.answer or []
        if at < len(answer) and stats.output_tokens < request.max_tokens:
            if stats.fidelity is not None and request.answer_top is not None:
                stats.fidelity.add(logits, request.answer_top[at])
            token = (
                sequence.grammar.choose(logits) if sequence.grammar is not None else int(np.argmax(logits))
            )
            if token == answer[at]:
                if sequence.grammar is not None:
                    sequence.grammar.accept(token)
                stats.verified_tokens += 1
                self._emit(sequence, token, logits)
                return
        else:
            token = None
        sequence.verifying = False
        sequence.skip, sequence.pending = sequence.batch_end - sequence.pos, []
        self.context.remove(sequence.seq, sequence.pos)
        self._choose(sequence, logits, token=token)

    def _choose(self, sequence: SlotSequence, logits: np.ndarray[Any, Any], token: int | None = None) -> None:
        """Pick the sequence's next token (`token` when already chosen from these logits), stream
        its text, or finish the sequence."""
        self._prompt_read(sequence)
        request, stats = sequence.request, sequence.request.stats
        if stats.output_tokens >= request.max_tokens:
            return self._finish(sequence, reason="length")
        if token is None:
            token = (
                sequence.grammar.choose(logits) if sequence.grammar is not None else int(np.argmax(logits))
            )
        if token < 0:
            return self._finish(sequence, reason="grammar_dead_end")
        if self.context.is_end(token):
            return self._finish(sequence, reason="stop")
        if sequence.grammar is not None:
            sequence.grammar.accept(token)
        self._emit(sequence, token, logits)
        if stats.output_tokens >= request.max_tokens:
            return self._finish(sequence, reason="length")
        sequence.next_token = token
        sequence.draft = self._draft(sequence)
        return None

    def _emit(self, sequence: SlotSequence, token: int, logits: np.ndarray[Any, Any]) -> None:
        """Count a token of the answer (with its row's top log-probabilities when asked for) and
        stream its text."""
        stats = sequence.request.stats
        stats.output_tokens += 1
        if sequence.lookup is not None:
            sequence.lookup.append(token)
        if stats.top_logprobs is not None:
            stats.top_logprobs.append(top_logprobs(logits, token))
        text = sequence.text.decode(self.context.piece(token))
        if text:
            sequence.request.out.put(text)

    def _finish(
        self, sequence: SlotSequence, *, reason: str | None = None, error: Exception | None = None
    ) -> None:
        """Free the sequence's slot and tell its caller how it ended."""
        self._running.pop(sequence.seq, None)
        if sequence is self._donor:
            self._donor = None
        self.context.remove(sequence.seq)
        request = sequence.request
        if sequence.grammar is not None:
            request.stats.grammar_fallbacks = sequence.grammar.fallbacks
            sequence.grammar.close()
        if error is not None:
            request.out.put(error)
            return
        request.stats.finish_reason = reason
        tail = sequence.text.decode(b"", final=True)
        if tail:
            request.out.put(tail)
        request.out.put(_END)
