"""Grammar-constrained greedy decoding of one sequence at a time, on a `llama_cpp.Llama`.

The grammar is checked on the unconstrained argmax first (`grammar.GrammarState`), so the
output is identical to `create_completion(temperature=0, grammar=...)` at a fraction of the
cost. The Ollama test double and the teacher-forcing tests decode with it, since it hands
out each step's logits; `quantgate run` decodes through `slots.SlotScheduler`, which batches
several sequences in one context.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from quantgate.backends.llamacpp._grammar import GrammarChecker, GrammarEngine
from quantgate.backends.llamacpp._logprobs import ForcedFidelity, TokenTop, top_logprobs


@dataclass
class Generation:
    """Counts of one `generate` call, filled in as it runs."""

    prompt_tokens: int = 0
    output_tokens: int = 0
    finish_reason: str | None = None
    grammar_fallbacks: int = 0
    forced_tokens: int = 0
    """Output tokens the grammar forced and that were decoded in a chunk (fast-forward)."""
    lookup_drafted: int = 0
    """Tokens drafted from text already seen (`lookup`) and read with a logits row each."""
    lookup_kept: int = 0
    """Output tokens among them that the model chose too (kept)."""
    answer_tokens: int | None = None
    """Tokens of the given answer to verify (the reference's); None: none was given, all decoded."""
    verified_tokens: int = 0
    """Output tokens read from the given answer and confirmed as the model's own choices."""
    top_logprobs: list[TokenTop] | None = None
    """Per output token, the row's top log-probabilities (`logprobs.top_logprobs`); a caller asks
    for them by setting an empty list before generating. None: not asked for."""
    fidelity: ForcedFidelity | None = None
    """Against the given answer's top log-probabilities, per position read (None: none given)."""

    @property
    def obtained(self) -> str:
        """How the output was obtained: `decoded` (no answer given), `verified` (the given answer,
        every token the model's own choice, and it ended there too), or `verified_then_decoded`
        (the first `verified_tokens` tokens read, the rest decoded)."""
        if self.answer_tokens is None:
            return "decoded"
        whole = self.verified_tokens == self.answer_tokens == self.output_tokens
        return "verified" if whole and self.finish_reason in ("stop", "length") else "verified_then_decoded"


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    size = min(len(a), len(b))
    if not size:
        return 0
    differ = np.flatnonzero(np.asarray(a[:size]) != np.asarray(b[:size]))
    return int(differ[0]) if differ.size else size


@dataclass(frozen=True)
class Step:
    """One generated token: its id, the text it completes, and the logits it was chosen from."""

    token: int
    text: str
    logits: np.ndarray[Any, np.dtype[np.float32]] | None


class GreedyDecoder:
    """Greedy decoding over one loaded `llama_cpp.Llama`, constrained by a GBNF grammar.

    The KV cache keeps the longest common prefix of consecutive prompts, as `Llama.generate`
    does, so a shared few-shot prefix is evaluated once.
    """

    def __init__(self, llama: Any, grammars: GrammarEngine | None = None) -> None:
        import llama_cpp

        self._c = llama_cpp
        self.llama = llama
        self._vocab = llama._model.vocab
        self._n_vocab = llama.n_vocab()
        self._grammars = grammars or GrammarChecker(self._vocab, self._n_vocab)

    def _logits(self) -> np.ndarray[Any, np.dtype[np.float32]]:
        pointer = self._c.llama_get_logits_ith(self.llama._ctx.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(self._n_vocab,))

    def _eval_prompt(self, tokens: list[int]) -> None:
        llama = self.llama
        prefix = common_prefix(llama.input_ids[: llama.n_tokens], tokens[:-1])
        llama.n_tokens = prefix
        llama.eval(tokens[prefix:])

    def generate(
        self, prompt: str | Sequence[int], grammar: str | None, max_tokens: int, stats: Generation
    ) -> Iterator[str]:
        """Yield the text of each generated token; `stats` is filled in as it goes.

        Args:
            prompt: The completion prompt, or its tokens.
            grammar: GBNF text with a `root` rule, or None for unconstrained greedy decoding.
            max_tokens: Generation limit (finish reason `length` when reached).
            stats: Receives token counts, the finish reason and grammar fallbacks.
        """
        for step in self.steps(prompt, grammar, max_tokens, stats):
            if step.text:
                yield step.text

    def steps(
        self, prompt: str | Sequence[int], grammar: str | None, max_tokens: int, stats: Generation
    ) -> Iterator[Step]:
        """Like `generate`, one `Step` per token with the logits it was chosen from.

        `prompt` may also be given as its tokens. A step's `logits` are valid only until the
        next step is requested. After the last token, a step with `token` -1 carries text left
        in the UTF-8 decoder, if any.
        """
        tokens = self.llama.tokenize(prompt.encode("utf-8")) if isinstance(prompt, str) else list(prompt)
        stats.prompt_tokens = len(tokens)
        self._eval_prompt(tokens)
        state = self._grammars.start(grammar) if grammar is not None else None
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        stats.finish_reason = "length"
        try:
            while stats.output_tokens < max_tokens:
                logits = self._logits()
                token = state.choose(logits) if state is not None else int(np.argmax(logits))
                if token < 0:
                    stats.finish_reason = "grammar_dead_end"
                    break
                if self._c.llama_vocab_is_eog(self._vocab, token):
                    stats.finish_reason = "stop"
                    break
                if state is not None:
                    state.accept(token)
                stats.output_tokens += 1
                if stats.top_logprobs is not None:  # asked for by the caller
                    stats.top_logprobs.append(top_logprobs(logits, token))
                yield Step(token=token, text=decoder.decode(self.llama.detokenize([token])), logits=logits)
                self.llama.eval([token])
            tail = decoder.decode(b"", final=True)
            if tail:
                yield Step(token=-1, text=tail, logits=None)
        finally:
            if state is not None:
                stats.grammar_fallbacks = state.fallbacks
                state.close()
