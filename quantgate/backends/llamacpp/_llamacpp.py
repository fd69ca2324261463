"""The embedded backend: a LangChain chat model over llama-cpp-python, in process.

Why not langchain-community's `ChatLlamaCpp` or llama-cpp-python's chat API: Gemma 3 270M
as packaged here is a *base* model with no chat template, so any chat format (the default
llama-2 one included) wraps the prompt in tokens the model never saw in training. We render
the conversation ourselves as a plain few-shot completion prompt (`render_prompt`), or, with the
`chat_template` option, through the GGUF's own chat template (`_chat_template.py`), and decode
it with `GreedyDecoder`; `ChatLlamaCpp` is also being sunset. Output is constrained
by a llama.cpp grammar built from the JSON schema once per schema, decoding is greedy
(temperature 0, so the seed has no effect but is recorded), and tokens are streamed so time
to first token is real.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk
from pydantic import ConfigDict

from quantgate._hardware import package_version
from quantgate.backends import LOOKUP_KWARG, BackendError, OpenedVariant
from quantgate.backends._backend_options import options_of
from quantgate.backends._streaming import StreamingChatModel
from quantgate.backends.llamacpp._engine import EmbeddedEngine
from quantgate.backends.llamacpp._greedy import Generation
from quantgate.backends.llamacpp._label_scores import closed_label_set
from quantgate.backends.llamacpp._llamacpp_options import LlamaCppOptions
from quantgate.backends.llamacpp._logprobs import given_answer, logprob_metadata
from quantgate.inputs._variants import Variant

if TYPE_CHECKING:
    pass


class LlamaCppChatModel(StreamingChatModel):
    """Chat model over an `EmbeddedEngine`, constrained to `json_schema` when set.

    Usage metadata carries the prompt and generated token counts; response metadata the
    finish reason (`stop` or `length`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: EmbeddedEngine
    json_schema: dict[str, Any] | None = None
    max_tokens: int = 512

    @property
    def _llm_type(self) -> str:
        return "quantgate-llamacpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_path": str(self.engine.model_path), "n_ctx": self.engine.n_ctx, "decoding": "greedy"}

    def get_num_tokens(self, text: str) -> int:
        """Count tokens with the model's own tokenizer."""
        return self.engine.count_tokens(text)

    def prompt_text(self, messages: Sequence[BaseMessage]) -> str:
        """The text the model reads for `messages`: the engine's prompt (`EmbeddedEngine.prompt`) with
        this model's schema (a tool-calling task's tools go to a chat template)."""
        return self.engine.prompt.text(messages, self.json_schema)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        prompt = self.prompt_text(messages)
        grammar = self.engine.grammar(self.json_schema) if self.json_schema else None
        stats = Generation(top_logprobs=[] if kwargs.get("top_logprobs") else None)  # `TOP_LOGPROBS_KWARG`
        answer: list[str] = []
        given, tops = given_answer(kwargs.get("answer"))  # the reference's answer (`VERIFY_KWARG`)
        lookup = given is not None or bool(kwargs.get(LOOKUP_KWARG))  # a verifying candidate drafts too
        generated = self.engine.generate(
            prompt, grammar, self.max_tokens, stats, answer=given, answer_top=tops, lookup=lookup
        )
        for text in generated:
            if run_manager:
                run_manager.on_llm_new_token(text)
            answer.append(text)
            yield ChatGenerationChunk(message=AIMessageChunk(content=text))
        scores = self.engine.label_metadata(prompt, "".join(answer), self.json_schema)
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata={
                    "input_tokens": stats.prompt_tokens,
                    "output_tokens": stats.output_tokens,
                    "total_tokens": stats.prompt_tokens + stats.output_tokens,
                },
                response_metadata={
                    "finish_reason": stats.finish_reason,
                    "model_name": self.engine.model_path.name,
                    "grammar_fallbacks": stats.grammar_fallbacks,
                    "forced_tokens": stats.forced_tokens,
                    "lookup_drafted": stats.lookup_drafted,
                    "lookup_kept": stats.lookup_kept,
                    "obtained": stats.obtained,
                    "answer_tokens": stats.answer_tokens,
                    "verified_tokens": stats.verified_tokens if stats.answer_tokens is not None else None,
                    **logprob_metadata(stats.top_logprobs, stats.fidelity),
                    **scores,
                },
                chunk_position="last",
            )
        )


@contextmanager
def open_llamacpp(
    variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
) -> Iterator[OpenedVariant]:
    """Load a variant's GGUF file in process (the `llamacpp` backend); freed when the block ends.

    Raises:
        BackendError: There is no file at the variant's `model`, or llama.cpp cannot load it.
    """
    path = Path(variant.model)
    if not path.is_file():
        raise BackendError(f"variant {variant.name}: no GGUF file at {path}")
    typed = options_of(variant, LlamaCppOptions)
    options = typed.engine_options()
    max_tokens = typed.max_tokens
    options.setdefault("slots", slots)
    try:
        engine = EmbeddedEngine(path, kv_cache=variant.kv_cache, **options)
    except (ValueError, RuntimeError, TypeError) as exc:
        raise BackendError(f"variant {variant.name}: llama.cpp could not load {path}: {exc}") from exc
    chat_model = LlamaCppChatModel(engine=engine, json_schema=dict(schema), max_tokens=max_tokens)
    try:
        yield OpenedVariant(
            chat_model=chat_model,
            runtime={
                "name": "llama.cpp (llama-cpp-python, in process)",
                "version": package_version("llama-cpp-python"),
                "n_ctx": engine.n_ctx,
                "n_threads": engine.n_threads,
                "slots": engine.slots,
                "flash_attn": engine.flash_attn,
                "kv_cache": engine.kv.record(),
                "seed": engine.seed,
                "decoding": "greedy (temperature 0), JSON-schema grammar, argmax checked first",
                "grammar_engine": engine.grammar_engine,
                **engine.prompt.record(),
                "fast_forward": engine.fast_forward,
                "use_mmap": False,
                "max_array_items": engine.max_array_items,
                "score_labels": engine.score_labels and closed_label_set(schema) is not None,
                "unenforced_schema_keywords": [str(keyword) for keyword in engine.unenforced(schema)],
            },
            context_window=engine.n_ctx,
            max_output_tokens=max_tokens,
            count_tokens=engine.count_tokens,
            for_schema=lambda other: chat_model.model_copy(update={"json_schema": dict(other)}),
            # a chat template also renders a tool-calling task's tools: the messages have that much less
            prompt_tools_tokens=lambda other: engine.prompt.tools_tokens(other, engine.count_tokens),
        )
    finally:
        engine.close()
