"""Grammar-constrained greedy decoding with llama.cpp, checking the grammar on one token first.

llama-cpp-python's `create_completion` applies the grammar to every candidate of the
vocabulary at every step. Gemma 3 has 262,144 tokens, so that check costs as much as the
model step itself. For greedy decoding the result is the same if we first take the
unconstrained argmax and ask the grammar about that single token: when it is allowed (the
usual case, since few-shot prompting already steers the model to valid JSON) it is also
the argmax of the constrained distribution; only when it is rejected do we apply the
grammar to the whole vocabulary. llama.cpp's own `common_sampler_sample` does the same.
The output is identical to `create_completion(temperature=0, grammar=...)`.
"""

from __future__ import annotations

import codecs
import ctypes
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")], align=True)


@dataclass
class Generation:
    """Counts of one `generate` call, filled in as it runs."""

    prompt_tokens: int = 0
    output_tokens: int = 0
    finish_reason: str | None = None
    grammar_fallbacks: int = 0


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

    def __init__(self, llama: Any) -> None:
        import llama_cpp

        self._c = llama_cpp
        self.llama = llama
        self._vocab = llama._model.vocab
        self._n_vocab = llama.n_vocab()
        self._candidates = np.zeros(self._n_vocab, dtype=_TOKEN_DATA)
        self._candidates["id"] = np.arange(self._n_vocab, dtype=np.int32)
        self._single = (llama_cpp.llama_token_data * 1)()

    def _logits(self) -> np.ndarray[Any, np.dtype[np.float32]]:
        pointer = self._c.llama_get_logits_ith(self.llama._ctx.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(self._n_vocab,))

    def _allowed(self, sampler: Any, token: int, logit: float) -> bool:
        self._single[0] = self._c.llama_token_data(token, logit, 0.0)
        array = self._c.llama_token_data_array(data=self._single, size=1, selected=-1, sorted=False)
        self._c.llama_sampler_apply(sampler, ctypes.byref(array))
        return bool(np.isfinite(self._single[0].logit))

    def _constrained_argmax(self, sampler: Any, logits: np.ndarray[Any, Any]) -> int:
        self._candidates["logit"] = logits
        data = self._candidates.ctypes.data_as(ctypes.POINTER(self._c.llama_token_data))
        array = self._c.llama_token_data_array(data=data, size=self._n_vocab, selected=-1, sorted=False)
        self._c.llama_sampler_apply(sampler, ctypes.byref(array))
        best = int(np.argmax(self._candidates["logit"]))
        return best if np.isfinite(self._candidates["logit"][best]) else -1

    def _eval_prompt(self, tokens: list[int]) -> None:
        llama = self.llama
        cached = llama.input_ids[: llama.n_tokens].tolist()
        prefix = 0
        for a, b in zip(cached, tokens[:-1], strict=False):
            if a != b:
                break
            prefix += 1
        llama.n_tokens = prefix
        llama.eval(tokens[prefix:])

    def generate(self, prompt: str, grammar: str | None, max_tokens: int, stats: Generation) -> Iterator[str]:
        """Yield the text of each generated token; `stats` is filled in as it goes.

        Args:
            prompt: The completion prompt.
            grammar: GBNF text with a `root` rule, or None for unconstrained greedy decoding.
            max_tokens: Generation limit (finish reason `length` when reached).
            stats: Receives token counts, the finish reason and grammar fallbacks.
        """
        for step in self.steps(prompt, grammar, max_tokens, stats):
            if step.text:
                yield step.text

    def steps(self, prompt: str, grammar: str | None, max_tokens: int, stats: Generation) -> Iterator[Step]:
        """Like `generate`, one `Step` per token with the logits it was chosen from.

        A step's `logits` are valid only until the next step is requested. After the last
        token, a step with `token` -1 carries text left in the UTF-8 decoder, if any.
        """
        tokens = self.llama.tokenize(prompt.encode("utf-8"))
        stats.prompt_tokens = len(tokens)
        self._eval_prompt(tokens)
        sampler = None
        if grammar is not None:
            sampler = self._c.llama_sampler_init_grammar(self._vocab, grammar.encode("utf-8"), b"root")
            if not sampler:
                raise ValueError("llama.cpp could not parse the grammar")
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        stats.finish_reason = "length"
        try:
            while stats.output_tokens < max_tokens:
                logits = self._logits()
                token = int(np.argmax(logits))
                if sampler is not None and not self._allowed(sampler, token, float(logits[token])):
                    stats.grammar_fallbacks += 1
                    token = self._constrained_argmax(sampler, logits)
                    if token < 0:
                        stats.finish_reason = "grammar_dead_end"
                        break
                if self._c.llama_vocab_is_eog(self._vocab, token):
                    stats.finish_reason = "stop"
                    break
                if sampler is not None:
                    self._c.llama_sampler_accept(sampler, token)
                stats.output_tokens += 1
                yield Step(token=token, text=decoder.decode(self.llama.detokenize([token])), logits=logits)
                self.llama.eval([token])
            tail = decoder.decode(b"", final=True)
            if tail:
                yield Step(token=-1, text=tail, logits=None)
        finally:
            if sampler is not None:
                self._c.llama_sampler_free(sampler)
