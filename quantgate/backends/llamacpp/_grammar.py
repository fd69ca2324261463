"""One sequence's GBNF grammar state for greedy decoding, checking one token first.

llama-cpp-python's `create_completion` applies the grammar to every candidate of the
vocabulary at every step. Gemma 3 has 262,144 tokens, so that check costs as much as the
model step itself. For greedy decoding the result is the same if we first take the
unconstrained argmax and ask the grammar about that single token: when it is allowed (the
usual case, since few-shot prompting already steers the model to valid JSON) it is also
the argmax of the constrained distribution; only when it is rejected do we apply the
grammar to the whole vocabulary. llama.cpp's own `common_sampler_sample` does the same.

Each sequence being decoded owns one `GrammarState`; states made by one `GrammarChecker`
share its candidate buffer, so they must be used from one thread (the decoder's).
"""

from __future__ import annotations

import ctypes
import warnings
from typing import Any, Protocol

import numpy as np

_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")], align=True)


class SequenceGrammar(Protocol):
    """A sequence's grammar state: `GrammarState` (GBNF) or `LlguidanceState`."""

    fallbacks: int

    def choose(self, logits: np.ndarray[Any, Any]) -> int:
        """The greedy allowed token, or -1 when none is allowed."""
        ...

    def accept(self, token: int) -> None:
        """Advance past `token`."""
        ...

    def fast_forward(self) -> list[int]:
        """The tokens the grammar forces next, already accepted; empty when it cannot tell."""
        ...

    def rollback(self, tokens: int) -> None:
        """Undo the last `tokens` accepted tokens."""
        ...

    def close(self) -> None:
        """Free the state."""
        ...


class GrammarEngine(Protocol):
    """Makes grammar states from grammar text: `GrammarChecker` or `LlguidanceChecker`."""

    def start(self, text: str) -> SequenceGrammar:
        """A fresh state at the start of the grammar."""
        ...


class GrammarChecker:
    """Makes grammar states for one vocabulary and holds the buffers they share."""

    def __init__(self, vocab: Any, n_vocab: int) -> None:
        import llama_cpp

        self._c = llama_cpp
        self.vocab = vocab
        self.n_vocab = n_vocab
        self.candidates = np.zeros(n_vocab, dtype=_TOKEN_DATA)
        self.candidates["id"] = np.arange(n_vocab, dtype=np.int32)
        self.single = (llama_cpp.llama_token_data * 1)()

    def start(self, gbnf: str) -> GrammarState:
        """A fresh state at the start of `gbnf` (a grammar with a `root` rule).

        Raises:
            ValueError: llama.cpp cannot parse the grammar.
        """
        sampler = self._c.llama_sampler_init_grammar(self.vocab, gbnf.encode("utf-8"), b"root")
        if not sampler:
            raise ValueError("llama.cpp could not parse the grammar")
        return GrammarState(self, sampler)


class GrammarState:
    """Where one sequence stands in its grammar: which token it may take next."""

    def __init__(self, checker: GrammarChecker, sampler: Any) -> None:
        self._checker = checker
        self._c = checker._c
        self._sampler = sampler
        self.fallbacks = 0
        """Steps where the unconstrained argmax was rejected and the whole vocabulary checked."""

    def _allowed(self, token: int, logit: float) -> bool:
        single = self._checker.single
        single[0] = self._c.llama_token_data(token, logit, 0.0)
        array = self._c.llama_token_data_array(data=single, size=1, selected=-1, sorted=False)
        self._c.llama_sampler_apply(self._sampler, ctypes.byref(array))
        return bool(np.isfinite(single[0].logit))

    def choose(self, logits: np.ndarray[Any, np.dtype[np.float32]]) -> int:
        """The greedy token the grammar allows after these logits; -1 when none is allowed."""
        token = int(np.argmax(logits))
        if self._allowed(token, float(logits[token])):
            return token
        self.fallbacks += 1
        candidates = self._checker.candidates
        candidates["logit"] = logits
        data = candidates.ctypes.data_as(ctypes.POINTER(self._c.llama_token_data))
        array = self._c.llama_token_data_array(
            data=data, size=self._checker.n_vocab, selected=-1, sorted=False
        )
        self._c.llama_sampler_apply(self._sampler, ctypes.byref(array))
        best = int(np.argmax(candidates["logit"]))
        return best if np.isfinite(candidates["logit"][best]) else -1

    def accept(self, token: int) -> None:
        """Advance the grammar past `token`."""
        self._c.llama_sampler_accept(self._sampler, token)

    def fast_forward(self) -> list[int]:
        """Nothing: llama.cpp's grammar sampler cannot say which tokens are forced."""
        return []

    def rollback(self, tokens: int) -> None:
        """Not possible with llama.cpp's grammar sampler (it never drafts, so never asked to)."""
        if tokens:
            raise ValueError("llama.cpp's grammar sampler cannot roll back")

    def close(self) -> None:
        """Free the llama.cpp sampler (idempotent)."""
        if self._sampler is not None:
            self._c.llama_sampler_free(self._sampler)
            self._sampler = None


def lark_of_schema(schema: dict[str, Any]) -> str:
    """An llguidance Lark grammar for one JSON value of `schema`, after an optional space.

    The prompt ends with ``JSON:`` and Gemma's tokenizer has ``' {"'`` as one token, so the
    grammar allows that leading space, as the GBNF grammar does. The schema is compiled
    leniently: a keyword llguidance cannot enforce is ignored (and named by
    `schema_grammar.unenforced_keywords`) instead of failing the variant.
    """
    import json

    lenient = {**schema, "x-guidance": {**schema.get("x-guidance", {}), "lenient": True}}
    return f'start: " "? answer\nanswer: %json {json.dumps(lenient)}\n'


class LlguidanceChecker:
    """Makes llguidance matcher states for one vocabulary.

    The tokenizer is built from the GGUF vocabulary (about 2 s for Gemma 3's 262,144 tokens),
    once per loaded model. Like `GrammarChecker`, the states share a buffer (the token
    bitmask) and must be used from one thread.
    """

    def __init__(self, vocab: Any, n_vocab: int, end_tokens: list[int]) -> None:
        import llguidance.llamacpp
        import llguidance.numpy

        self._ll = llguidance
        self.masks = llguidance.numpy
        with warnings.catch_warnings():  # it calls a deprecated llama-cpp-python function per token
            warnings.simplefilter("ignore", DeprecationWarning)
            self.tokenizer = llguidance.llamacpp.lltokenizer_from_vocab(
                vocab, n_vocab=n_vocab, eos_token=end_tokens
            )
        self.bitmask = llguidance.numpy.allocate_token_bitmask(1, n_vocab)
        self.n_vocab = n_vocab
        self.end_tokens = end_tokens

    def start(self, lark: str) -> LlguidanceState:
        """A fresh matcher at the start of `lark` (see `lark_of_schema`).

        Raises:
            ValueError: llguidance rejects the grammar (its message says why).
        """
        matcher = self._ll.LLMatcher(self.tokenizer, lark)
        if matcher.is_error():
            raise ValueError(f"llguidance rejected the grammar: {matcher.get_error()}")
        return LlguidanceState(self, matcher)


class LlguidanceState:
    """One sequence's llguidance matcher, checking the unconstrained argmax first."""

    def __init__(self, checker: LlguidanceChecker, matcher: Any) -> None:
        self._checker = checker
        self._matcher = matcher
        self.fallbacks = 0

    def choose(self, logits: np.ndarray[Any, np.dtype[np.float32]]) -> int:
        """The greedy token the grammar allows after these logits; -1 when none is allowed."""
        token = int(np.argmax(logits))
        if self._matcher.validate_tokens([token]) == 1:
            return token
        self.fallbacks += 1
        if self._matcher.is_error():
            return -1
        if self._matcher.is_stopped():  # the answer is complete: only the end may follow
            return self._checker.end_tokens[0]
        bitmask = self._checker.bitmask
        masks = self._checker.masks
        masks.fill_next_token_bitmask(self._matcher, bitmask, 0)
        masked = np.array(logits[: self._checker.n_vocab], dtype=np.float32)
        masks.apply_token_bitmask_inplace(masked, bitmask[0])
        best = int(np.argmax(masked))
        return best if np.isfinite(masked[best]) else -1

    def accept(self, token: int) -> None:
        """Advance the matcher past `token`."""
        self._matcher.consume_token(token)

    def fast_forward(self) -> list[int]:
        """The tokens the schema forces next (keys, punctuation), already accepted.

        llguidance tokenizes the forced text itself (canonically, holding back a last token
        that could merge with what follows), so the tokens can differ from the ones the
        model would have chosen one at a time: the caller checks them against the model
        (`slots.SlotScheduler`) and rolls back what the model would not have chosen.
        """
        tokens: list[int] = self._matcher.compute_ff_tokens()
        if tokens:
            self._matcher.consume_tokens(tokens)
        return tokens

    def rollback(self, tokens: int) -> None:
        """Undo the last `tokens` accepted tokens."""
        if tokens:
            self._matcher.rollback(tokens)

    def close(self) -> None:
        """Nothing to free (the matcher is garbage-collected)."""
