"""The extraction graph: text in, a validated JSON record out. The same graph runs in
evaluation and in production; the model (a quantized variant or anything else) comes in
through the runtime context, so swapping a variant means passing another context.

    prepare -> extract -> validate -> normalize -> END
                  ^           |
                  +- repair <-+   (bounded: at most `max_repairs` more attempts)

`validate` judges the output after normalization, so only what normalization cannot fix
goes back to the model; `normalize` then writes the canonical record.
`prepare` builds the prompt (field descriptions, few-shot examples) and cuts inputs that
would not fit in the model's context, recording that it did. `extract` streams the model
so time to first token is measured. A backend error ends the run with `error` set.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from evaluators.format import FormatEvaluator, parse_json_output
from evaluators.normalize import normalize_record
from evaluators.schema import FieldSpec
from evaluators.task_models import tool_set_key
from evaluators.tasks import ExtractionTask, Task, field_spec
from graphs.long_inputs import prompt_messages
from graphs.prompting import build_messages, native_tools_text, prompt_text, repair_turn
from graphs.streamed import ModelCallError, failure_kind, stream_timed

DEFAULT_MAX_REPAIRS = 2
"""Extra attempts after an invalid output, unless a run or a deployment says otherwise."""
_SAFETY_TOKENS = 16


@dataclass(kw_only=True)
class ExtractionContext:
    """What the graph runs with: the model, the schema, the prompt material and limits.

    Attributes:
        model: Any LangChain chat model; for structured output it should already be
            constrained to `schema` (the quantgate backends do this).
        schema: The record's JSON Schema.
        examples: Few-shot (text, record) pairs.
        max_repairs: Extra attempts after an invalid output, each told what was wrong.
        context_window: The model's context in tokens, when known (enables the long-input check).
        max_output_tokens: Tokens reserved for the answer.
        count_tokens: The model's tokenizer; without it tokens are estimated as characters / 3.
        max_retries: Calls repeated after a retryable `ModelCallError`, per attempt.
        retry_backoff_s: Wait before the first retry; doubled each time.
        task: What the model is asked (`evaluators.tasks`): the prompt's instruction, and the
            fields of `schema` (for the kinds other than extraction, derived from the task).
        native_tools: A tool-calling task's tools go as the model API's own `tools`: prompt for a call.
        verify_kwarg: The keyword under which the model takes an answer to verify (an input's
            `answers`): the backends that declare `verification` read it at prefill speed instead
            of writing their own, keeping it as far as they would have written it. None: every
            call decodes, and `answers` are not used.
        model_for_schema: The same model constrained to another record schema (a backend's
            `OpenedVariant.for_schema`), for the cases that bring their own tools (`for_task`);
            None: `model` serves every schema (it is not constrained by one).
        prompt_tools_tokens: Tokens the model's prompt adds for a record schema beyond the messages
            (a backend's `OpenedVariant.prompt_tools_tokens`: an embedded chat template renders the
            tools of `schema`), left out of the input budget; None: none.
    """

    model: BaseChatModel
    schema: Mapping[str, Any]
    examples: Sequence[tuple[str, Mapping[str, Any]]] = ()
    max_repairs: int = DEFAULT_MAX_REPAIRS
    context_window: int | None = None
    max_output_tokens: int = 512
    count_tokens: Callable[[str], int] | None = None
    max_retries: int = 2
    retry_backoff_s: float = 0.5
    task: Task = field(default_factory=ExtractionTask)
    native_tools: bool = False
    verify_kwarg: str | None = None
    model_for_schema: Callable[[Mapping[str, Any]], BaseChatModel] | None = None
    prompt_tools_tokens: Callable[[Mapping[str, Any]], int] | None = None

    def for_task(self, task: Task) -> ExtractionContext:
        """The context of a case's task when cases bring their own tools (docs/tasks.md): its
        record schema, its prompt and the model constrained to that schema; one context for every
        case with the same tools, so that they share its prompt prefix and grammar."""
        key = tool_set_key(task.offered_tools)
        if key not in self._case_contexts:
            schema = task.record_schema()
            assert schema is not None, "a task of a case's own derives its record schema"
            model = self.model if self.model_for_schema is None else self.model_for_schema(schema)
            self._case_contexts.setdefault(key, replace(self, task=task, schema=schema, model=model))
        return self._case_contexts[key]

    @cached_property
    def _case_contexts(self) -> dict[str, ExtractionContext]:
        """The contexts of the cases' own tasks, by tool set (`for_task`)."""
        return {}

    @cached_property
    def spec(self) -> FieldSpec:
        """The schema as a field tree (parsed once)."""
        return field_spec(self.task, self.schema)

    @cached_property
    def format(self) -> FormatEvaluator:
        """The schema validator (built once)."""
        return FormatEvaluator(schema=self.schema)

    def tokens(self, text: str) -> int:
        """Token count of `text`, exact when a tokenizer is known."""
        return self.count_tokens(text) if self.count_tokens else len(text) // 3 + 1

    @cached_property
    def prompt_prefix(self) -> list[BaseMessage]:
        """Instructions and few-shot examples: the same for every case, so built once."""
        tools, task, shots = self.native_tools, self.task, self.examples
        return build_messages(schema=self.schema, examples=shots, text="", task=task, native_tools=tools)[:-1]

    @cached_property
    def input_budget(self) -> int | None:
        """Tokens left for a case's text in the context window; None when the window is unknown."""
        if not self.context_window:
            return None
        tools = native_tools_text(self.task, self.native_tools)  # "" unless the tools go natively
        overhead = sum(self.tokens(prompt_text(m)) + 4 for m in self.prompt_prefix) + 4
        overhead += self.tokens(tools) if tools else 0
        overhead += self.prompt_tools_tokens(self.schema) if self.prompt_tools_tokens else 0
        return max(self.context_window - overhead - self.max_output_tokens - _SAFETY_TOKENS, 0)


class GivenAnswer(TypedDict):
    """Another model's answer to the same prompt, for the model to verify: its text and, when that
    model kept them, its top log-probabilities per token (`quantgate.backends.llamacpp._logprobs.TokenTop`),
    against which the model's rows are compared (the attempt's `fidelity`)."""

    text: str
    top_logprobs: NotRequired[list[dict[str, Any]]]


class ExtractionInput(TypedDict):
    """What a caller gives the graph: the text, and optionally its language (`fr`, `de-CH`, ...),
    in which numbers and dates of the output are read ("1.234,56", "3 mars 2024")."""

    text: str
    lang: NotRequired[str | None]
    answers: NotRequired[Sequence[GivenAnswer | str | None] | None]
    """Per model call (the first, then each repair), another model's answer to the same prompt for
    the model to verify instead of writing its own (evaluation gives candidates the reference's);
    used only when the context's `verify_kwarg` is set."""
    model_options: NotRequired[dict[str, Any] | None]
    """Keyword options of this case's model calls (evaluation asks the reference to keep its top
    log-probabilities, `quantgate.backends.TOP_LOGPROBS_KWARG`, and to draft from text already seen,
    `quantgate.backends.LOOKUP_KWARG`)."""


class Attempt(TypedDict):
    """Timing and token counts of one model call.

    `reported` holds the numeric fields the backend reported with its answer (for Ollama:
    `prompt_eval_count`, `prompt_eval_duration`, `eval_count`, `eval_duration`,
    `load_duration`, in its own units); `retries` the calls repeated after retryable errors;
    `text` the model's text; `obtained` how it was obtained when the model says (`decoded`,
    `verified`: an answer given to verify, every token the model's own choice; `verified_then_decoded`:
    decoded from the first position where it was not, `reported["verified_tokens"]`);
    `top_logprobs` the model's top log-probabilities per token, when asked for; `fidelity` its
    figures against a given answer's (`kld`, `top1`, `delta_p`, `kinds` per position read);
    `unverified_reason` why a given answer was decoded instead (a server's verification: the first
    token its model would not choose, no end after the answer, a request that failed).
    """

    ttft_s: float | None
    total_s: float
    input_tokens: int | None
    output_tokens: int | None
    finish_reason: str | None
    reported: dict[str, float]
    retries: int
    text: NotRequired[str]
    obtained: NotRequired[str | None]
    top_logprobs: NotRequired[list[dict[str, Any]]]
    fidelity: NotRequired[dict[str, list[Any]]]
    unverified_reason: NotRequired[str]


class ExtractionState(ExtractionInput, total=False):
    """Input, output and the conversation so far.

    Its output keys are those of `ExtractionResult`, the graph's output schema (a test holds
    them equal, name and type): `record` is the normalized record when `valid`, else the last
    parsed (invalid) value or None; `raw` the model's last text; `validation_errors` what was
    wrong with it.
    """

    record: dict[str, Any] | None
    raw: str | None
    valid: bool
    validation_errors: list[str]
    attempts: Annotated[list[Attempt], operator.add]
    truncated: bool
    input_tokens_dropped: int
    output_limit: bool
    error: str | None
    error_kind: str | None
    retries: int
    messages: list[BaseMessage]


@dataclass(frozen=True, kw_only=True)
class ExtractionResult:
    """What the graph returns (its output schema), with the defaults filled in.

    `graph.invoke(...)` returns it as a dict of the keys set; `graph.invoke(..., version="v2").value`
    is this type, as is `ExtractionResult.from_output` of the dict.
    """

    record: dict[str, Any] | None = None
    raw: str | None = None
    valid: bool = False
    validation_errors: list[str] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    truncated: bool = False
    input_tokens_dropped: int = 0
    output_limit: bool = False
    error: str | None = None
    error_kind: str | None = None
    retries: int = 0

    @classmethod
    def from_output(cls, output: Mapping[str, Any]) -> ExtractionResult:
        """Build from the dict the graph returns (keys not of the result, as a larger graph's
        state has, are left out; a key missing or None takes its default)."""
        given = {f.name: output.get(f.name) for f in fields(cls)}
        return cls(**{name: value for name, value in given.items() if value is not None})


def prepare(state: ExtractionState, runtime: Runtime[ExtractionContext]) -> dict[str, Any]:
    """Build the prompt; cut the text to what fits in the context, and record the cut."""
    messages, dropped = prompt_messages(runtime.context, state["text"])
    return {"messages": messages, "truncated": dropped > 0, "input_tokens_dropped": dropped}


def extract(state: ExtractionState, runtime: Runtime[ExtractionContext]) -> dict[str, Any]:
    """Call the model (streaming, to time the first token); record raw text and usage.

    A retryable `ModelCallError` is retried with exponential backoff, the partial answer
    discarded; any other failure, or running out of retries, ends the case with its error.
    """
    ctx = runtime.context
    retries = 0
    earlier = state.get("retries", 0)  # retries of previous (repaired) attempts
    options = _call_options(state, ctx)
    while True:
        answer = stream_timed(ctx.model, state["messages"], options)
        exc = answer.error
        if exc is None:
            break
        if not isinstance(exc, ModelCallError) or not exc.retryable or retries >= ctx.max_retries:
            return _failed(exc, failure_kind(exc), earlier + retries)
        time.sleep(ctx.retry_backoff_s * 2**retries)
        retries += 1
    usage, metadata = answer.usage, answer.metadata
    attempt = Attempt(
        ttft_s=answer.ttft_s(),
        total_s=answer.total_s(),
        input_tokens=usage.get("input_tokens") or None,  # 0: not reported (a prompt has tokens)
        output_tokens=usage.get("output_tokens"),
        finish_reason=metadata.get("finish_reason") or metadata.get("done_reason"),
        reported={
            k: v for k, v in metadata.items() if isinstance(v, int | float) and not isinstance(v, bool)
        },
        retries=retries,
    )
    raw = answer.text
    attempt["text"] = raw
    if isinstance(metadata.get("obtained"), str):
        attempt["obtained"] = metadata["obtained"]
    if isinstance(metadata.get("unverified_reason"), str):
        attempt["unverified_reason"] = metadata["unverified_reason"]
    if isinstance(metadata.get("top_logprobs"), list):
        attempt["top_logprobs"] = metadata["top_logprobs"]
    if isinstance(metadata.get("fidelity"), dict):
        attempt["fidelity"] = metadata["fidelity"]
    return {"raw": raw, "attempts": [attempt], "retries": earlier + retries}


def _call_options(state: ExtractionState, ctx: ExtractionContext) -> dict[str, Any]:
    """The model call's keyword options: the input's `model_options`, and this attempt's answer to
    verify when the input gives one and the model takes it (`ExtractionContext.verify_kwarg`)."""
    options = dict(state.get("model_options") or {})
    answers = state.get("answers") or []
    attempt = len(state.get("attempts") or [])
    given = answers[attempt] if attempt < len(answers) else None
    if ctx.verify_kwarg and given is not None:
        options[ctx.verify_kwarg] = given
    return options


def _failed(exc: Exception, kind: str, retries: int) -> dict[str, Any]:
    return {"error": f"{type(exc).__name__}: {exc}", "error_kind": kind, "valid": False, "retries": retries}


def validate(state: ExtractionState, runtime: Runtime[ExtractionContext]) -> dict[str, Any]:
    """Parse the raw text as JSON and check it against the schema.

    The schema check is made on the normalized form, so a repair is asked for only when
    normalization cannot fix the output (a date in words or "1.234,56" in a number field
    is fixed by `normalize`, not sent back to the model).
    """
    ctx = runtime.context
    parsed, syntax_error = parse_json_output(state.get("raw") or "")
    if syntax_error is not None:
        return _invalid(state, ctx, None, [str(syntax_error)])
    errors = ctx.format.schema_errors(normalize_record(ctx.spec, parsed, lang=state.get("lang")))
    if errors:
        return _invalid(state, ctx, parsed if isinstance(parsed, dict) else None, [str(e) for e in errors])
    return {"valid": True, "record": parsed if isinstance(parsed, dict) else None, "validation_errors": []}


def _invalid(
    state: ExtractionState, ctx: ExtractionContext, record: dict[str, Any] | None, errors: list[str]
) -> dict[str, Any]:
    """An invalid answer; when it stopped at the output limit, said so (no repair follows)."""
    attempts = state.get("attempts") or []
    limited = bool(attempts) and attempts[-1]["finish_reason"] == "length"
    if limited:
        errors = [*errors, output_limit_message(attempts[-1]["output_tokens"], ctx.max_output_tokens)]
    return {"valid": False, "record": record, "validation_errors": errors, "output_limit": limited}


def output_limit_message(output_tokens: int | None, max_tokens: int) -> str:
    """Why an answer cut at the output limit is not repaired, and what to change."""
    used = f"{output_tokens} tokens" if output_tokens is not None else "its token limit"
    return (
        f"the answer reached the output limit ({used}) before the JSON was complete; no repair "
        f"was asked for, since a repair would get the same limit: raise the variant's max_tokens "
        f"option (now {max_tokens}) if records of this schema need more"
    )


def repair(state: ExtractionState, runtime: Runtime[ExtractionContext]) -> dict[str, Any]:
    """Feed the validation errors back and ask again (`graphs.prompting.repair_turn`)."""
    turn = repair_turn(
        raw=state.get("raw") or "",
        record=state.get("record"),
        errors=state.get("validation_errors", []),
        native_tools=runtime.context.native_tools,
    )
    return {"messages": [*state["messages"], *turn]}


def normalize(state: ExtractionState, runtime: Runtime[ExtractionContext]) -> dict[str, Any]:
    """Canonical values: ISO dates, numbers from numeric strings, null for blank strings."""
    return {"record": normalize_record(runtime.context.spec, state.get("record"), lang=state.get("lang"))}


def after_extract(state: ExtractionState) -> Literal["validate", "__end__"]:
    """Stop on a backend error; otherwise validate."""
    return "__end__" if state.get("error") else "validate"


def after_validate(
    state: ExtractionState, runtime: Runtime[ExtractionContext]
) -> Literal["normalize", "repair", "__end__"]:
    """Valid: normalize. Invalid: repair while attempts remain, else stop; an answer cut at the
    output limit is not repaired (the repair would get the same limit)."""
    if state.get("valid"):
        return "normalize"
    if not state.get("output_limit") and len(state.get("attempts", [])) <= runtime.context.max_repairs:
        return "repair"
    return "__end__"


ExtractionGraph = CompiledStateGraph[ExtractionState, ExtractionContext, ExtractionInput, ExtractionResult]
"""The compiled extraction graph's type."""


def build_extraction_graph() -> ExtractionGraph:
    """Compile the extraction graph (context: `ExtractionContext`)."""
    builder = StateGraph(
        ExtractionState,
        context_schema=ExtractionContext,
        input_schema=ExtractionInput,
        output_schema=ExtractionResult,
    )
    builder.add_node("prepare", prepare)
    builder.add_node("extract", extract)
    builder.add_node("validate", validate)
    builder.add_node("repair", repair)
    builder.add_node("normalize", normalize)
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "extract")
    builder.add_conditional_edges("extract", after_extract)
    builder.add_conditional_edges("validate", after_validate)
    builder.add_edge("repair", "extract")
    builder.add_edge("normalize", END)
    return builder.compile(name="extraction")


graph = build_extraction_graph()
