"""The log-probabilities of several continuations of one prompt, in one llama.cpp decode.

`label_scores` needs, for each label of a closed set, the log-probability of its tokens after
the prompt. Teacher-forcing them one label after the other on a one-sequence context costs two
decode calls per label (the last prompt token again, then the label's tokens), each reading the
whole output matrix (Gemma 3: 262,144 x 640 weights) for every row of logits.

`ContinuationScorer` holds its own context of several sequences (`n_seq_max` = labels + 1,
one unified KV buffer, a full-size sliding-window cache, as `batch.LlamaBatchContext`): sequence
0 keeps the prompt, whose longest common prefix with the previous prompt stays cached; each
continuation k gets sequence k + 1, which shares the prompt's cells. The prompt's uncached tail
(in every sequence) and all continuations' tokens go in one batch (split only past `n_batch`
entries), with logits only on the rows that predict a continuation token: one decode per case
instead of two per label, the output matrix read once for all rows. llama.cpp caps a context's
sequences (`llama_max_parallel_sequences`, 256): past 255 labels, they are scored in groups of
255, one decode each, the prompt's cells kept in sequence 0 between them (`scorer_sequences`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from quantgate.backends.llamacpp._greedy import common_prefix


class _Entry(NamedTuple):
    token: int
    pos: int
    seqs: tuple[int, ...]
    targets: tuple[tuple[int, int], ...]  # (continuation, token) pairs its logits score; () no logits


def log_normalizer(row: np.ndarray[Any, Any]) -> float:
    """log Σ_v exp(row[v]) in float64 (log softmax(row)[t] = row[t] - this). Row by row: a row
    of Gemma 3's vocabulary in float64 is 2 MB; all of a case's rows at once (~70 MB) took
    several times longer in a profile."""
    values = row.astype(np.float64)
    top = float(values.max())
    return top + math.log(float(np.exp(values - top).sum()))


def scorer_sequences(continuations: int) -> int:
    """The sequences of a scorer of `continuations` at once: one each and the prompt's, at most
    llama.cpp's limit per context (more continuations are scored in groups)."""
    import llama_cpp

    return min(continuations + 1, int(llama_cpp.llama_max_parallel_sequences()))


class ContinuationScorer:
    """A multi-sequence context over a loaded `llama_cpp.Llama`'s model, for scoring continuations."""

    def __init__(self, llama: Any, *, sequences: int, n_ctx: int, n_threads: int, n_batch: int = 512) -> None:
        import llama_cpp
        from llama_cpp._internals import LlamaContext

        self._c = llama_cpp
        source = llama.context_params
        params = type(source).from_buffer_copy(source)
        params.n_ctx = n_ctx
        params.n_batch = params.n_ubatch = n_batch
        params.n_seq_max = sequences
        params.kv_unified = True
        params.swa_full = True
        params.n_threads = params.n_threads_batch = n_threads
        self._context = LlamaContext(model=llama._model, params=params, verbose=False)
        self.sequences = sequences
        self.n_ctx = llama_cpp.llama_n_ctx(self._context.ctx)
        self.n_batch = n_batch
        self._n_vocab = llama.n_vocab()
        self._memory = llama_cpp.llama_get_memory(self._context.ctx)
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, sequences)
        self._cached: list[int] = []  # the tokens sequence 0 holds

    def logprobs(self, prompt: Sequence[int], continuations: Sequence[Sequence[int]]) -> list[float]:
        """Σ_i log P(continuation[i] | prompt, continuation[:i]) for each continuation, in groups
        of as many continuations as the context has sequences besides the prompt's.

        Raises:
            ValueError: No prompt tokens, an empty continuation, or more tokens in a group than
                the context holds.
        """
        if not prompt or not continuations or not all(continuations):
            raise ValueError("a prompt and non-empty continuations are needed")
        if self.sequences < 2:
            raise ValueError(f"a context of {self.sequences} sequence has none for a continuation")
        group = self.sequences - 1
        totals: list[float] = []
        for start in range(0, len(continuations), group):
            totals += self._group_logprobs(prompt, continuations[start : start + group])
        return totals

    def _group_logprobs(self, prompt: Sequence[int], continuations: Sequence[Sequence[int]]) -> list[float]:
        needed = len(prompt) + sum(len(c) - 1 for c in continuations)
        if needed > self.n_ctx:
            raise ValueError(f"{needed} tokens to score, more than the context of {self.n_ctx}")
        kept = min(common_prefix(self._cached, prompt), len(prompt) - 1)
        self._c.llama_memory_seq_rm(self._memory, -1, kept, -1)
        for k in range(1, len(continuations) + 1):
            self._c.llama_memory_seq_rm(self._memory, k, -1, -1)
            self._c.llama_memory_seq_cp(self._memory, 0, k, 0, kept)
        entries = _entries(prompt, kept, continuations)
        totals = [0.0] * len(continuations)
        try:
            for start in range(0, len(entries), self.n_batch):
                self._decode(entries[start : start + self.n_batch], totals)
        finally:
            for k in range(1, len(continuations) + 1):
                self._c.llama_memory_seq_rm(self._memory, k, -1, -1)
        self._cached = list(prompt)
        return totals

    def _decode(self, entries: Sequence[_Entry], totals: list[float]) -> None:
        batch = self._batch
        for i, entry in enumerate(entries):
            batch.token[i] = entry.token
            batch.pos[i] = entry.pos
            batch.n_seq_id[i] = len(entry.seqs)
            for j, seq in enumerate(entry.seqs):
                batch.seq_id[i][j] = seq
            batch.logits[i] = bool(entry.targets)
        batch.n_tokens = len(entries)
        self._cached = []  # sequence 0 is being rewritten
        status = self._c.llama_decode(self._context.ctx, batch)
        if status != 0:
            raise RuntimeError(f"llama_decode returned {status} while scoring labels")
        scored = [i for i, entry in enumerate(entries) if entry.targets]
        if not scored:
            return
        for i in scored:
            row = self._row(i)
            normalizer = log_normalizer(row)
            for continuation, token in entries[i].targets:
                totals[continuation] += float(row[token]) - normalizer

    def _row(self, index: int) -> np.ndarray[Any, np.dtype[np.float32]]:
        pointer = self._c.llama_get_logits_ith(self._context.ctx, index)
        return np.ctypeslib.as_array(pointer, shape=(self._n_vocab,))

    def close(self) -> None:
        """Free the batch and the context."""
        if self._batch is not None:
            self._c.llama_batch_free(self._batch)
            self._batch = None
        self._context.close()  # type: ignore[no-untyped-call]


def _entries(prompt: Sequence[int], kept: int, continuations: Sequence[Sequence[int]]) -> list[_Entry]:
    """The batch entries: the prompt's tail after `kept` (in every sequence, logits after its last
    token, which predict every continuation's first token), then each continuation but its last
    token in its own sequence, each with the logits that predict the next token."""
    everyone = tuple(range(len(continuations) + 1))
    entries = [_Entry(t, kept + i, everyone, ()) for i, t in enumerate(prompt[kept:-1])]
    firsts = tuple((k, tokens[0]) for k, tokens in enumerate(continuations))
    entries.append(_Entry(prompt[-1], len(prompt) - 1, everyone, firsts))
    for k, tokens in enumerate(continuations):
        for i, token in enumerate(tokens[:-1]):
            entries.append(_Entry(token, len(prompt) + i, (k + 1,), ((k, tokens[i + 1]),)))
    return entries
