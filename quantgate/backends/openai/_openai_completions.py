"""An OpenAI-compatible server's `/v1/completions` (`api = "completions"`): the prompt text quantgate
renders for a base model (`render_prompt`), the JSON schema held by a grammar the server is
shown to enforce, through LangChain's completion client `OpenAI`, streamed.

`CompletionChatModel` makes the completion client look like a chat model to the graph: the
messages become one prompt text, the text chunks become message chunks carrying the stream's
`finish_reason` (so `OpenAIServerChatModel` times, counts and names its failures as on the chat
API). LangChain's `OpenAI.stream` yields bare strings; its `_stream` yields the chunks with their
`finish_reason`, so that is what is read.

How the schema is sent (`structured_output`): the GBNF grammar of the schema the embedded backend
decodes with (`gbnf_grammar`) as the request's `grammar` field (llama-cpp-python's
`llama_cpp.server`, llama.cpp's `llama-server`), or `response_format` `json_schema` (vLLM), or
none. A server may ignore a field it does not know and still answer 200, so each is PROBED: a
call of a few tokens whose grammar (schema) allows only an improbable literal; the field is
enforced when the answer is that literal or a start of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseLLM
from langchain_core.messages import AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk

from graphs.streamed import ModelCallError
from quantgate.backends import BackendError
from quantgate.backends._base_prompt import render_prompt
from quantgate.backends._schema_grammar import unenforced_keywords
from quantgate.backends._streaming import StreamingChatModel
from quantgate.backends.openai._openai_chat import classify
from quantgate.inputs._variants import Variant

__all__ = [
    "COMPLETION_FORMATS",
    "MAX_ARRAY_ITEMS",
    "PROBE_LITERAL",
    "CompletionChatModel",
    "completion_body",
    "completion_client",
    "completion_decoding",
    "extra_body_option",
    "probe_body",
    "probe_verdict",
]

COMPLETION_FORMATS = ("auto", "grammar", "json_schema", "none")
"""The `response_format` option under `api = "completions"`; `auto` tries them in this order."""

MAX_ARRAY_ITEMS = 20
"""Arrays in the grammar are capped as the embedded backend caps them by default."""

PROBE_LITERAL = "zqxv"
"""What a probe's grammar (schema) allows: a text no model starts a JSON answer with."""

_PROBE_PROMPT = [HumanMessage("Answer with an empty JSON object.")]
_PROBE_TOKENS = 3


_SET_BY_QUANTGATE = frozenset(
    {"model", "messages", "prompt", "stream", "stream_options", "max_tokens", "max_completion_tokens"}
    | {"temperature", "seed", "response_format", "grammar"}
)
"""Request fields quantgate sets itself, which `extra_body` may not set."""


def extra_body_option(variant: Variant) -> dict[str, Any]:
    """The `extra_body` option: fields sent with every generation request (e.g. llama.cpp's
    `repeat_penalty = 1.0`), a table whose keys are not the ones quantgate sets itself.

    Raises:
        BackendError: Not a table, or a key quantgate sets (the option that sets it is named).
    """
    extra = variant.options.get("extra_body", {})
    if not isinstance(extra, Mapping):
        raise BackendError(
            f"variant {variant.name}: extra_body must be a table of request fields, e.g. "
            f"extra_body = {{repeat_penalty = 1.0}}, got {extra!r}"
        )
    clashing = sorted(str(key) for key in extra if key in _SET_BY_QUANTGATE)
    if clashing:
        raise BackendError(
            f"variant {variant.name}: extra_body sets {', '.join(clashing)}, which quantgate sets itself "
            "(use the options max_tokens, seed, response_format)"
        )
    return {str(key): value for key, value in extra.items()}


class CompletionChatModel(StreamingChatModel):
    """A completion client (`langchain_openai.OpenAI`) read as a chat model: the messages rendered
    by `prompt` (`render_prompt`), its text chunks as `AIMessageChunk`s with the `finish_reason`.

    Attributes:
        llm: The completion client (streaming; no retries of its own).
        prompt: How the messages become the prompt text.
    """

    llm: BaseLLM
    prompt: Callable[[Sequence[BaseMessage]], str] = render_prompt

    @property
    def _llm_type(self) -> str:
        return "quantgate-openai-completions"

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self.llm._stream(self.prompt(messages), stop=stop, **kwargs):
            finish = (chunk.generation_info or {}).get("finish_reason")
            metadata = {"finish_reason": finish} if finish else {}
            message = AIMessageChunk(content=chunk.text, response_metadata=metadata)
            if run_manager and chunk.text:
                run_manager.on_llm_new_token(chunk.text)
            yield ChatGenerationChunk(message=message)


def completion_body(kind: str, schema: Mapping[str, Any], extra_body: Mapping[str, Any]) -> dict[str, Any]:
    """The request's extra fields: the variant's `extra_body`, and the schema as `kind` sends it:
    `grammar` (its GBNF grammar), `json_schema` (`response_format`), or nothing (`none`)."""
    body = dict(extra_body)
    if kind == "grammar":
        from quantgate.backends._schema_grammar import gbnf_grammar

        body["grammar"] = gbnf_grammar(schema, MAX_ARRAY_ITEMS)
    elif kind == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "record", "schema": dict(schema), "strict": True},
        }
    return body


def probe_body(kind: str, extra_body: Mapping[str, Any]) -> dict[str, Any]:
    """A probe's extra fields: a grammar (schema) allowing only `PROBE_LITERAL` (as a JSON string
    under `json_schema`)."""
    body = dict(extra_body)
    if kind == "grammar":
        body["grammar"] = f'root ::= "{PROBE_LITERAL}"'
    elif kind == "json_schema":
        schema = {"type": "string", "enum": [PROBE_LITERAL]}
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "probe", "schema": schema}}
    return body


def completion_client(
    endpoint: tuple[str, str, str | None],
    *,
    seed: int,
    timeout_s: float,
    body: Mapping[str, Any],
    max_tokens: int,
) -> Any:
    """LangChain's `OpenAI` completion client: greedy (temperature 0, a fixed seed), streaming, no
    retries of its own (the graph retries), a read timeout of `timeout_s`, `body` as extra fields."""
    from langchain_openai import OpenAI
    from pydantic import SecretStr

    base_url, model, key = endpoint
    return OpenAI(
        model=model,
        base_url=base_url,
        api_key=SecretStr(key or "no-key"),  # the client insists on one; a server without keys ignores it
        temperature=0.0,
        seed=seed,
        max_tokens=max_tokens,
        extra_body=dict(body),
        timeout=timeout_s,
        max_retries=0,
        streaming=True,
    )


def probe_verdict(
    kind: str, answer: str | None, failure: BaseException | None
) -> tuple[str, ModelCallError | None]:
    """What a probe showed: `enforced`, `ignored` (a 200 whose answer is not the literal), `refused`
    (a 4xx, or a 500 with the API's JSON body) or `unknown` (a timeout, a busy server, anything
    else); with the failure, named, when the call failed."""
    import openai

    if failure is not None:
        named = classify(failure)
        if isinstance(failure, openai.APIStatusError):
            status = failure.status_code
            refused = (400 <= status < 500 and status != 429) or status == 500
            return ("refused" if refused and isinstance(failure.body, dict) else "unknown"), named
        return ("refused" if named.kind == "connection" else "unknown"), named
    literal = f'"{PROBE_LITERAL}"' if kind == "json_schema" else PROBE_LITERAL
    text = (answer or "").lstrip()
    shown = len(text) >= 2 and (literal.startswith(text) or text.startswith(literal))
    return ("enforced" if shown else "ignored"), None


def run_probe(
    endpoint: tuple[str, str, str | None],
    kind: str,
    *,
    seed: int,
    timeout_s: float,
    extra_body: Mapping[str, Any],
) -> tuple[str, ModelCallError | None, str | None]:
    """One probe call for `kind` (`grammar`, `json_schema`; `none`: a plain call, for the server's
    refusals alone): the verdict, the named failure, and the answer."""
    client = completion_client(
        endpoint, seed=seed, timeout_s=timeout_s, body=probe_body(kind, extra_body), max_tokens=_PROBE_TOKENS
    )
    model = CompletionChatModel(llm=client)
    answer: list[str] = []
    try:
        for chunk in model.stream(_PROBE_PROMPT):
            answer.append(str(chunk.content))
    except Exception as exc:
        verdict, named = probe_verdict(kind, None, exc)
        return verdict, named, None
    text = "".join(answer)
    return probe_verdict(kind, text, None)[0], None, text


def choose_completion_format(
    name: str,
    endpoint: tuple[str, str, str | None],
    wanted: str,
    *,
    seed: int,
    timeout_s: float,
    extra_body: Mapping[str, Any],
) -> tuple[str, dict[str, str]]:
    """The way the schema is sent that the server is shown to enforce: the variant's (`wanted`), or
    under `auto` `grammar`, else `json_schema`, else none; and what each probe showed.

    Raises:
        BackendError: Nothing listens, the key or the model is refused, or the server does not
            enforce the way the variant asked for.
    """
    kinds = ("grammar", "json_schema", "none") if wanted == "auto" else (wanted,)
    shown: dict[str, str] = {}
    for kind in kinds:
        verdict, named, answer = run_probe(
            endpoint, kind, seed=seed, timeout_s=timeout_s, extra_body=extra_body
        )
        if named is not None and named.kind in ("connection", "unauthorized", "not_found"):
            raise BackendError(f"variant {name}: {endpoint[0]}: {named}")
        if kind == "none":
            if verdict == "refused":
                raise BackendError(f"variant {name}: {endpoint[0]}: {named}")
            return kind, shown
        shown[kind] = verdict if named is None else f"{verdict}: {named}"
        if verdict == "ignored":
            shown[kind] += f" (answered {answer!r} where only {PROBE_LITERAL!r} was allowed)"
        if verdict == "enforced":
            return kind, shown
    raise BackendError(
        f"variant {name}: the server does not enforce response_format {wanted} on /v1/completions "
        f"({shown[wanted]}); use auto or none"
    )


def completion_decoding(kind: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """`runtime.decoding` of a completions variant, and the schema keywords its grammar leaves
    unenforced (`grammar` only: the embedded backend's converter; else the engine is unknown)."""
    if kind == "grammar":
        return {
            "decoding": "greedy, the JSON schema's GBNF grammar in the request's grammar field, enforced "
            "(probed)",
            "unenforced_schema_keywords": [
                str(k) for k in unenforced_keywords(schema, engine="gbnf", max_items=MAX_ARRAY_ITEMS)
            ],
        }
    if kind == "json_schema":
        return {
            "decoding": "greedy, response_format json_schema, enforced by the server (probed)",
            "unenforced_schema_keywords": None,
        }
    return {
        "decoding": "no grammar or response_format: validation and repairs only",
        "unenforced_schema_keywords": None,
    }
