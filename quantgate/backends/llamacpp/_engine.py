"""The embedded engine: one GGUF loaded in this process by llama-cpp-python, its grammar per schema,
its decoding (one sequence, or slots in one context), its prompt and its label scores; the chat
model over it is `quantgate.backends.llamacpp._llamacpp`."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluators.json_tokens import token_kinds
from quantgate._hardware import physical_cores
from quantgate.backends._schema_grammar import (
    GRAMMAR_ENGINES,
    GrammarEngineName,
    UnenforcedKeyword,
    gbnf_grammar,
    grammar_schema,
    unenforced_keywords,
)
from quantgate.backends.llamacpp._chat_template import BasePrompt, ChatTemplate, EmbeddedPrompt
from quantgate.backends.llamacpp._grammar import (
    GrammarChecker,
    GrammarEngine,
    LlguidanceChecker,
    lark_of_schema,
)
from quantgate.backends.llamacpp._greedy import Generation, GreedyDecoder
from quantgate.backends.llamacpp._kv_cache import kv_cache_params
from quantgate.backends.llamacpp._label_context import ContinuationScorer, scorer_sequences
from quantgate.backends.llamacpp._label_scores import LABEL_SCORING_KEY, closed_label_set, label_metadata
from quantgate.backends.llamacpp._logprobs import TokenTop
from quantgate.inputs._variants import KVCache

if TYPE_CHECKING:
    from quantgate.backends.llamacpp._slots import SlotScheduler

DEFAULT_GRAMMAR_ENGINE: GrammarEngineName = "gbnf"
"""llama.cpp's GBNF grammar sampler, checked on the argmax first; llguidance is the other
choice (`grammar_engine="llguidance"`). Measured against each other in
`benchmarks/grammar_engines.py`."""

_TOKENIZER_CTX = 512
"""With slots, the `Llama`'s own context only serves tokenization: kept small."""


def _check_options(*, slots: int | None, grammar_engine: str, fast_forward: bool) -> None:
    """Refuse option values that cannot work together (before the model is loaded)."""
    if slots is not None and slots < 1:
        raise ValueError(f"slots must be at least 1, got {slots}")
    if grammar_engine not in GRAMMAR_ENGINES:
        raise ValueError(
            f"grammar_engine must be one of {', '.join(GRAMMAR_ENGINES)}, got {grammar_engine!r}"
        )
    if fast_forward and grammar_engine != "llguidance":
        raise ValueError('fast_forward needs grammar_engine = "llguidance"')


class EmbeddedEngine:
    """One GGUF loaded in this process by llama.cpp, shared by the chat models over it.

    The weights are read into memory (`use_mmap=False`) so that the process RSS growth
    after loading is the model's real footprint. Generation and prompt batches use
    `n_threads` threads, all physical cores by default. Flash attention is on by default with
    slots: on 2 CPU cores it makes a decode step at a depth of 1,800 tokens about 20% faster,
    with 1 to 4 sequences (`benchmarks/throughput.py`). Without slots it is off by default, so
    that the one-sequence decoder gives exactly llama-cpp-python's `create_completion` tokens and
    teacher forcing one token at a time reproduces generation's logits bit for bit (with flash
    attention, llama.cpp's results depend slightly on how the KV cache is filled).

    With `slots` set, requests are decoded by a `SlotScheduler`: up to `slots` sequences at
    once in one context of `n_ctx` KV cells shared by them (the shared prompt prefix is held
    once). Without it, one sequence at a time on the `Llama`'s own context (`decoder`, which
    also hands out each step's logits), serialized by `lock`; the longest common token prefix
    of consecutive prompts stays in the KV cache, so the few-shot prefix is evaluated once.

    With `fast_forward` (llguidance only), the tokens the schema forces after each chosen
    token (keys, punctuation) are decoded in the same batch as a draft that the model checks
    (`SlotScheduler.fast_forward`). It applies with slots; the one-sequence decoder goes
    token by token.

    `kv_cache` sets the attention cache's K and V types (f16 when None); a quantized V cache
    turns flash attention on, as llama.cpp requires (`quantgate.backends.llamacpp._kv_cache`).

    `prompt` renders a chat as the text the model reads and tokenizes it: the base-model prompt, or
    with `chat_template` the GGUF's own chat template (`quantgate.backends.llamacpp._chat_template`;
    a GGUF without one is refused, named, with a `ValueError`).
    """

    prompt: EmbeddedPrompt = BasePrompt()

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        slots: int | None = None,
        flash_attn: bool | None = None,
        grammar_engine: GrammarEngineName = DEFAULT_GRAMMAR_ENGINE,
        fast_forward: bool = False,
        seed: int = 0,
        max_array_items: int = 20,
        score_labels: bool = False,
        kv_cache: KVCache | None = None,
        chat_template: bool = False,
    ) -> None:
        from llama_cpp import Llama
        from llama_cpp._utils import suppress_stdout_stderr

        _check_options(slots=slots, grammar_engine=grammar_engine, fast_forward=fast_forward)
        self.grammar_engine = grammar_engine
        self.fast_forward = fast_forward and slots is not None
        self.model_path = Path(model_path)
        self.n_ctx = n_ctx
        self.n_threads = n_threads or physical_cores()
        self.slots = slots
        self.kv = kv_cache_params(kv_cache, flash_attn=flash_attn, default_flash_attn=slots is not None)
        self.flash_attn = self.kv.flash_attn
        self.seed = seed
        self.max_array_items = max_array_items
        self.score_labels = score_labels
        self.lock = threading.Lock()
        self._scoring_lock = threading.Lock()
        self._grammars: dict[str, str] = {}
        self.scheduler: SlotScheduler | None = None
        self._decoder: GreedyDecoder | None = None
        self._scorer: ContinuationScorer | None = None
        with suppress_stdout_stderr(disable=False):  # llama.cpp prints KV-cache notes even when not verbose
            self.llama = Llama(
                model_path=str(self.model_path),
                n_ctx=n_ctx if slots is None else _TOKENIZER_CTX,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                flash_attn=self.flash_attn,
                type_k=self.kv.type_k,
                type_v=self.kv.type_v,
                seed=seed,
                use_mmap=False,
                verbose=False,
            )
            if chat_template:
                self.prompt = ChatTemplate.of_model(self.llama, self.model_path, free_on_error=True)
            self._checker = self._grammar_checker()
            if slots is not None:
                self._start_slots(slots, fast_forward)
        if slots is None:
            self._decoder = GreedyDecoder(self.llama, self._checker)

    def _start_slots(self, slots: int, fast_forward: bool) -> None:
        from quantgate.backends.llamacpp._batch import LlamaBatchContext
        from quantgate.backends.llamacpp._slots import SlotScheduler

        checker, n_threads = self._checker, self.n_threads
        self._batch_context = LlamaBatchContext(
            self.llama, sequences=slots + 1, n_ctx=self.n_ctx, n_threads=n_threads, grammars=checker
        )
        self.scheduler = SlotScheduler(self._batch_context, slots, fast_forward=fast_forward)

    def _grammar_checker(self) -> GrammarEngine:
        vocab, n_vocab = self.llama._model.vocab, self.llama.n_vocab()
        if self.grammar_engine == "gbnf":
            return GrammarChecker(vocab, n_vocab)
        import llama_cpp

        ends = [t for t in range(n_vocab) if llama_cpp.llama_vocab_is_eog(vocab, t)]
        return LlguidanceChecker(vocab, n_vocab, ends)

    @property
    def decoder(self) -> GreedyDecoder:
        """The one-sequence decoder, which also hands out each step's logits.

        Raises:
            RuntimeError: The engine was opened with slots (its `Llama` context only tokenizes).
        """
        if self._decoder is None:
            raise RuntimeError("this engine decodes with slots; open it without slots to decode step by step")
        return self._decoder

    def generate(
        self,
        prompt: str,
        grammar: str | None,
        max_tokens: int,
        stats: Generation,
        *,
        answer: str | None = None,
        answer_top: Sequence[TokenTop] | None = None,
        lookup: bool = False,
    ) -> Iterator[str]:
        """Greedy decoding of `prompt`, yielding each token's text (see `GreedyDecoder.generate`).

        With `answer` (another model's answer to the same prompt, the reference's) and slots, the
        answer is verified instead (`SlotScheduler.generate`): read at prefill speed and kept as far
        as this model would have chosen its tokens, decoded from there; `stats` says how far. The
        one-sequence decoder decodes (`stats.answer_tokens` stays None). With `answer_top` (the
        answer's top log-probabilities, its model's), each position read is compared with them
        (`stats.fidelity`, with the kind of the answer's token there). Setting `stats.top_logprobs`
        to an empty list asks for this model's own per token. With `lookup` and slots, drafts from
        the prompt, the answer and what was written are checked as speculative decoding does
        (`SlotScheduler.generate`); the one-sequence decoder decodes token by token.

        Thread-safe: with slots the request joins the batch, else it waits for the lock.
        """
        tokens = self.prompt.tokens(self.llama, prompt)
        if self.scheduler is not None:
            given = None if answer is None else self.llama.tokenize(answer.encode("utf-8"), add_bos=False)
            yield from self.scheduler.generate(
                tokens, grammar, max_tokens, stats, answer=given, answer_top=answer_top, lookup=lookup
            )
            if stats.fidelity is not None and given is not None:
                pieces = [bytes(self.llama.detokenize([token])) for token in given]
                stats.fidelity.kinds = list(token_kinds(pieces)[: len(stats.fidelity.kld)])
            return
        with self.lock:
            yield from self.decoder.generate(tokens, grammar, max_tokens, stats)

    def grammar(self, schema: Mapping[str, Any]) -> str:
        """The grammar of a JSON schema (arrays capped) for the engine's grammar engine, once per schema."""
        key = json.dumps(schema, sort_keys=True)
        if key in self._grammars:
            return self._grammars[key]
        if self.grammar_engine == "llguidance":
            prepared = grammar_schema(schema, self.max_array_items, self.grammar_engine)
            self._grammars[key] = lark_of_schema(prepared)
        else:
            self._grammars[key] = gbnf_grammar(schema, self.max_array_items)
        return self._grammars[key]

    def label_metadata(self, prompt: str, raw: str, schema: Mapping[str, Any] | None) -> dict[str, float]:
        """With `score_labels`, a single-label classification answer's label probabilities and the
        seconds they took (`label_scores.label_metadata`, in a context of one sequence per label
        plus the prompt's, at most llama.cpp's 256, made at the first answer, one case at a time);
        empty otherwise."""
        labels = closed_label_set(schema) if self.score_labels else None
        if labels is None:
            return {}
        started = time.perf_counter()
        with self._scoring_lock:
            sequences = scorer_sequences(len(labels.labels))
            if self._scorer is None or self._scorer.sequences < sequences:
                if self._scorer is not None:
                    self._scorer.close()
                self._scorer = ContinuationScorer(
                    self.llama, sequences=sequences, n_ctx=self.n_ctx, n_threads=self.n_threads
                )
            scores = label_metadata(
                self.llama, self._scorer, self.prompt.tokens(self.llama, prompt), raw, labels
            )
        return {**scores, LABEL_SCORING_KEY: time.perf_counter() - started} if scores else {}

    def unenforced(self, schema: Mapping[str, Any]) -> tuple[UnenforcedKeyword, ...]:
        """The keywords of `schema` the engine's grammar does not enforce (`unenforced_keywords`)."""
        return unenforced_keywords(schema, engine=self.grammar_engine, max_items=self.max_array_items)

    def count_tokens(self, text: str) -> int:
        """Number of tokens of `text` (without BOS)."""
        return len(self.llama.tokenize(text.encode("utf-8"), add_bos=False))

    def close(self) -> None:
        """Stop the scheduler, free the model and its contexts."""
        if self.scheduler is not None:
            self.scheduler.close()
            self._batch_context.close()
        if self._scorer is not None:
            self._scorer.close()
        self.llama.close()
