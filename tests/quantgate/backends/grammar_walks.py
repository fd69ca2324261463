"""Random walks through a constrained decoder, for the property tests of `schema_grammar`.

The walk runs the production grammar state (llama.cpp's GBNF sampler or llguidance's matcher)
over Gemma 3's real vocabulary, restricted to a small set of one-character tokens, a few word
tokens and the end-of-sequence token: at each step it asks the grammar which of those it
allows and takes one at random, leaning towards closing quotes, brackets and the end so that
walks finish (where llguidance forces a key, it allows only the key's own tokens, and the walk
takes those). A walk that takes the end token is an output that "stopped": the grammar said
the JSON value was complete.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from quantgate.backends._schema_grammar import GrammarEngineName
from quantgate.backends.llamacpp._engine import EmbeddedEngine
from quantgate.backends.llamacpp._grammar import GrammarChecker, LlguidanceChecker

_CHARACTERS = '{}[]",: 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-.+@_%/\\'
_WORDS = ("null", "true", "false")
_CLOSERS = '"]}'
MAX_STEPS = 600


@dataclass
class Walker:
    """Walks grammars of one engine over the restricted vocabulary."""

    engine: GrammarEngineName
    llama: Any
    tokens: list[int]
    texts: dict[int, str]
    end: int
    checker: Any

    @classmethod
    def open(cls, engine: GrammarEngineName, gguf: Path) -> Walker:
        import llama_cpp

        llama = llama_cpp.Llama(str(gguf), vocab_only=True, verbose=False)
        vocab, n_vocab = llama._model.vocab, llama.n_vocab()
        texts: dict[int, str] = {}
        for piece in (*_CHARACTERS, *_WORDS):
            ids = llama.tokenize(piece.encode(), add_bos=False, special=False)
            assert len(ids) == 1, f"{piece!r} is not one token of the vocabulary"
            texts[ids[0]] = piece
        end = int(llama.token_eos())
        if engine == "gbnf":
            checker: Any = GrammarChecker(vocab, n_vocab)
        else:
            ends = [t for t in range(n_vocab) if llama_cpp.llama_vocab_is_eog(vocab, t)]
            checker = LlguidanceChecker(vocab, n_vocab, ends)
        return cls(engine=engine, llama=llama, tokens=[*texts, end], texts=texts, end=end, checker=checker)

    def grammar(self, schema: dict[str, Any]) -> str:
        """The grammar text production would use for `schema` (arrays capped at 4 items)."""
        engine = EmbeddedEngine.__new__(EmbeddedEngine)  # grammar conversion needs no model
        engine._grammars = {}
        engine.max_array_items = 4
        engine.grammar_engine = self.engine
        return engine.grammar(schema)

    def _allowed(self, state: Any) -> list[int]:
        if self.engine == "gbnf":
            return [t for t in self.tokens if state._allowed(t, 0.0)]
        matcher = state._matcher
        if matcher.is_stopped():
            return [self.end]
        bitmask = self.checker.bitmask
        self.checker.masks.fill_next_token_bitmask(matcher, bitmask, 0)
        words = np.asarray(bitmask[0]).view(np.uint32)
        allowed = [t for t in self.tokens if (int(words[t >> 5]) >> (t & 31)) & 1]
        if allowed:
            return allowed
        # Where the schema forces text (a key), llguidance allows only its canonical tokens.
        return [int(i) * 32 + b for i in np.flatnonzero(words) for b in range(32) if (int(words[i]) >> b) & 1]

    def _text(self, token: int) -> str:
        if token not in self.texts:
            self.texts[token] = self.llama.detokenize([token]).decode("utf-8")
        return self.texts[token]

    def walk(self, grammar: str, rng: random.Random) -> str | None:
        """One random output that the grammar ended, or None when it did not end in `MAX_STEPS`
        (or no token of the restricted vocabulary could go on)."""
        state = self.checker.start(grammar)
        text: list[str] = []
        try:
            for _ in range(MAX_STEPS):
                allowed = self._allowed(state)
                if not allowed:
                    return None
                closing = [t for t in allowed if t == self.end or self._text(t) in _CLOSERS]
                token = rng.choice(closing if closing and rng.random() < 0.35 else allowed)
                if token == self.end:
                    return "".join(text)
                state.accept(token)
                text.append(self._text(token))
            return None
        finally:
            state.close()
