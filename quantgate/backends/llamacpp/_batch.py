"""A llama.cpp context that holds several sequences, through llama-cpp-python's low-level API.

`Llama(n_seq_max=...)` does not reach llama.cpp (llama-cpp-python builds its context for
one sequence), so the context is made here from the loaded model, with the `Llama`'s own
context parameters (flash attention as the engine set it, ...) except:

- `n_seq_max` = slots + 1 (the last sequence keeps the shared prompt prefix);
- `kv_unified`: one KV buffer of `n_ctx` cells shared by all sequences. Without it llama.cpp
  gives each sequence `n_ctx / n_seq_max` cells and copies a prefix only whole;
- `swa_full`: Gemma 3's sliding-window layers keep a full-size cache, so a sequence can be
  cut back to its prefix;
- `n_threads` and `n_threads_batch` as given (all physical cores by default).

It implements `slot_sequences.BatchContext`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from quantgate.backends.llamacpp._grammar import GrammarChecker, GrammarEngine, SequenceGrammar


class LlamaBatchContext:
    """A multi-sequence context over the model of a loaded `llama_cpp.Llama`."""

    def __init__(
        self,
        llama: Any,
        *,
        sequences: int,
        n_ctx: int,
        n_threads: int,
        grammars: GrammarEngine | None = None,
        n_batch: int = 512,
    ) -> None:
        import llama_cpp
        from llama_cpp._internals import LlamaContext

        self._c = llama_cpp
        self._llama = llama
        source = llama.context_params
        params = type(source).from_buffer_copy(source)
        params.n_ctx = n_ctx
        params.n_batch = n_batch
        params.n_ubatch = n_batch
        params.n_seq_max = sequences
        params.kv_unified = True
        params.swa_full = True
        params.n_threads = n_threads
        params.n_threads_batch = n_threads
        self._context = LlamaContext(model=llama._model, params=params, verbose=False)
        self.n_ctx = llama_cpp.llama_n_ctx(self._context.ctx)
        self.n_batch = n_batch
        self.n_threads = n_threads
        self._memory = llama_cpp.llama_get_memory(self._context.ctx)
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self._vocab = llama._model.vocab
        self._n_vocab = llama.n_vocab()
        self._grammars = grammars or GrammarChecker(self._vocab, self._n_vocab)

    def decode(self, tokens: Sequence[int], positions: Sequence[int], seqs: Sequence[int],
               logits: Sequence[bool]) -> None:  # fmt: skip
        """Decode one batch (at most `n_batch` entries).

        Raises:
            RuntimeError: llama.cpp returned an error (1: no room left in the KV cache).
        """
        batch = self._batch
        for i, (token, pos, seq, want) in enumerate(zip(tokens, positions, seqs, logits, strict=True)):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = want
        batch.n_tokens = len(tokens)
        status = self._c.llama_decode(self._context.ctx, batch)
        if status == 1:
            raise RuntimeError("no room left in the KV cache (llama_decode returned 1)")
        if status != 0:
            raise RuntimeError(f"llama_decode returned {status}")

    def logits(self, index: int) -> np.ndarray[Any, np.dtype[np.float32]]:
        """The logits after batch entry `index` (a view, valid until the next decode)."""
        pointer = self._c.llama_get_logits_ith(self._context.ctx, index)
        return np.ctypeslib.as_array(pointer, shape=(self._n_vocab,))

    def copy_sequence(self, src: int, dst: int) -> None:
        """Make `dst` share all of `src`'s cells."""
        self._c.llama_memory_seq_cp(self._memory, src, dst, -1, -1)

    def remove(self, seq: int, start: int = 0) -> None:
        """Drop `seq`'s cells from position `start` on."""
        self._c.llama_memory_seq_rm(self._memory, seq, start, -1)

    def is_end(self, token: int) -> bool:
        """Whether the token ends generation."""
        return bool(self._c.llama_vocab_is_eog(self._vocab, token))

    def piece(self, token: int) -> bytes:
        """The token's bytes, as `Llama.detokenize` gives them."""
        return bytes(self._llama.detokenize([token]))

    def grammar(self, text: str) -> SequenceGrammar:
        """A fresh grammar state (GBNF, or llguidance Lark, as the grammar engine takes)."""
        return self._grammars.start(text)

    def close(self) -> None:
        """Free the batch and the context."""
        if self._batch is not None:
            self._c.llama_batch_free(self._batch)
            self._batch = None
        self._context.close()  # type: ignore[no-untyped-call]
