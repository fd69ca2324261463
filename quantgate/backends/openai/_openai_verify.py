"""Verification through an OpenAI-compatible server: an `openai:` variant with the option `verify`
reads the reference's answer in ONE `/v1/completions` request instead of writing its own.

The request's prompt is the text the variant reads (`OpenAIForcing.prompt`: the completions API's
rendered prompt, or the server's `/apply-template`) followed by the answer, with `max_tokens: 1`,
temperature 0 and the variant's seed and `extra_body`, and the server's log-probabilities of that
given text:

- `echo`: `echo: true, logprobs: 1`, OpenAI's legacy form (`logprobs.tokens`, `token_logprobs`,
  `top_logprobs`, `text_offset` over the prompt, the answer and the one token generated), which
  llama-cpp-python's `llama_cpp.server` and vLLM answer (llama.cpp's `llama-server` ignores `echo`);
- `prompt_logprobs`: vLLM's extension `prompt_logprobs: 1` (with `logprobs: 1`): the choice's
  `prompt_logprobs` is a list with one entry per prompt token, `null` for the first, else a mapping
  of token id to `{"logprob", "rank", "decoded_token"}` holding the top-1 (rank 1) and the prompt's
  own token when it is not the top-1 (vLLM's `vllm/v1/engine/logprobs.py`, `_make_pos_logprob_dict`;
  `vllm/entrypoints/openai/completion/serving.py` puts `final_res.prompt_logprobs` in the choice).

The answer is verified when at every position of its text the server's top-1 token is the token
there and the one token generated after it ends the answer (`finish_reason` "stop"): the top-1
unconstrained equal to the answer's token is the grammar-constrained greedy choice too, since the
reference wrote the answer under the same schema. Then the answer's text is the generation and
nothing is decoded. Otherwise the variant decodes the whole answer as it would have (a server cannot
resume a grammar mid-answer), and the attempt says why (`unverified_reason`) and where the first
difference was (`verified_tokens`). A server error, a timeout or an answer without the lists also
falls back to decoding, with the reason.

The positions are put on the answer's text by their offsets, counted back from the end of the
answer: llama-cpp-python counts `text_offset` in the text without special tokens (so from the start
they do not match the prompt text), vLLM's are the running sum of the token strings; both agree with
the answer's own characters. The prompt's last token may take the answer's first characters (one
token across the boundary): the server then reads the prompt otherwise than decoding does, so that
answer is decoded. The lists are the model's distribution before the server's samplers: with
llama.cpp's servers set `extra_body = {repeat_penalty = 1.0}`, as their greedy decoding needs anyway.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGenerationChunk
from pydantic import ConfigDict

from quantgate.backends import TOP_LOGPROBS_KWARG, VERIFY_KWARG, BackendError
from quantgate.backends._backend_options import options_of
from quantgate.backends._streaming import StreamingChatModel
from quantgate.backends.openai._openai_forcing import UNKNOWN_PROMPT, OpenAIForcing
from quantgate.backends.openai._openai_options import OpenAIOptions
from quantgate.inputs._variants import Variant

__all__ = [
    "NO_VERIFICATION",
    "ServerVerdict",
    "ServerVerifier",
    "VerifyingChatModel",
    "read_verdict",
    "server_verifier",
]

NO_VERIFICATION = (
    'an openai variant verifies the reference\'s answers only with the option verify = "echo" or '
    '"prompt_logprobs", on a server that returns the log-probabilities of given text '
    "(docs/openai-servers.md)"
)
"""Why an `openai:` variant without `verify` decodes every case (the run's `verification_missing`)."""

DECODED = "the whole answer was decoded (a server cannot resume the grammar mid-answer)"
"""What follows every reason an answer was not verified."""


@dataclass(frozen=True, kw_only=True)
class ServerVerdict:
    """What the server's log-probabilities say of an answer.

    Attributes:
        verified: Every position's top-1 is the answer's token, and the model ends after it.
        answer_tokens: The answer's tokens as the server read them; None when they could not be found.
        verified_tokens: The answer's tokens before the first that is not the top-1 (all of them when
            only the end differs); None when the answer's tokens could not be found.
        input_tokens: The prompt's tokens, when the server says.
        reason: Why the answer was not verified; None when it was.
    """

    verified: bool
    answer_tokens: int | None = None
    verified_tokens: int | None = None
    input_tokens: int | None = None
    reason: str | None = None


class _UnreadableError(Exception):
    """The server's answer does not give what verification needs (the message says what)."""


class _Position(NamedTuple):
    """One token the server read: its text, where it starts, the server's top-1 there (None: no list),
    and whether that top-1 is this token (None: no list)."""

    token: str
    offset: int
    top: str | None
    agrees: bool | None


def verification_body(
    form: str, prompt: str, answer: str, *, seed: int, extra: Mapping[str, Any]
) -> dict[str, Any]:
    """The one request's fields (beside `model`) for `form` (`echo` or `prompt_logprobs`)."""
    body = {**extra, "prompt": prompt + answer, "max_tokens": 1, "temperature": 0.0, "seed": seed}
    body.update({"logprobs": 1, "stream": False})
    body.update({"echo": True} if form == "echo" else {"prompt_logprobs": 1})
    return body


def read_verdict(form: str, response: Mapping[str, Any], prompt: str, answer: str) -> ServerVerdict:
    """The verdict on `answer` from the server's answer to `verification_body` (never raises)."""
    try:
        choice = _choice(response)
        if form == "echo":
            positions, end, generated = _echo_positions(choice, response, prompt, answer)
        else:
            positions, end, generated = _prompt_positions(choice)
    except _UnreadableError as exc:
        return ServerVerdict(verified=False, reason=str(exc))
    prompt_tokens = (response.get("usage") or {}).get("prompt_tokens")
    ended = choice.get("finish_reason") == "stop"
    return _verdict(positions, end, answer, ended=ended, generated=generated, prompt_tokens=prompt_tokens)


def _choice(response: Mapping[str, Any]) -> Mapping[str, Any]:
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise _UnreadableError(f"the server's answer has no choices: {str(response)[:200]}")
    return choices[0]


def _echo_positions(
    choice: Mapping[str, Any], response: Mapping[str, Any], prompt: str, answer: str
) -> tuple[list[_Position], int, str]:
    """The prompt's and the answer's tokens of an echo, the end of the answer among their offsets,
    and the text generated after it. The generated tokens are the last `usage.completion_tokens`
    (vLLM lists the end token it generated, llama-cpp-python does not, and each counts as it lists)."""
    text = choice.get("text")
    if not isinstance(text, str) or not text.startswith(prompt + answer):
        raise _UnreadableError(
            "the server did not echo the prompt and the answer (its text does not start with them): it "
            "does not take echo (llama.cpp's llama-server ignores it)"
        )
    logprobs = choice.get("logprobs")
    logprobs = logprobs if isinstance(logprobs, Mapping) else {}
    tokens, tops = logprobs.get("tokens"), logprobs.get("top_logprobs")
    if not isinstance(tokens, list) or not isinstance(tops, list) or len(tops) != len(tokens) or not tokens:
        raise _UnreadableError("the server's echo has no logprobs lists (tokens and top_logprobs)")
    generated = (response.get("usage") or {}).get("completion_tokens")
    if not isinstance(generated, int) or not 0 <= generated < len(tokens):
        raise _UnreadableError(
            "the echo gives no usage.completion_tokens: its generated tokens cannot be told apart"
        )
    offsets = _offsets(logprobs.get("text_offset"), [str(t) for t in tokens])
    read = len(tokens) - generated
    positions = [_echo_position(str(tokens[i]), offsets[i], tops[i]) for i in range(read)]
    end = offsets[read] if generated else offsets[-1] + len(str(tokens[-1]))
    return positions, end, text[len(prompt + answer) :]


def _offsets(given: Any, tokens: Sequence[str]) -> list[int]:
    """The tokens' `text_offset`, or the running sum of their lengths when the server gives none."""
    if isinstance(given, list) and len(given) == len(tokens) and all(isinstance(o, int) for o in given):
        return list(given)
    sums = [0]
    for token in tokens[:-1]:
        sums.append(sums[-1] + len(token))
    return sums


def _echo_position(token: str, offset: int, top: Any) -> _Position:
    scored = (
        {str(t): p for t, p in top.items() if isinstance(p, int | float)} if isinstance(top, Mapping) else {}
    )
    if not scored:
        return _Position(token, offset, None, None)
    best = max(scored, key=scored.__getitem__)
    return _Position(token, offset, best, best == token)


def _prompt_positions(choice: Mapping[str, Any]) -> tuple[list[_Position], int, str]:
    """The tokens of vLLM's `prompt_logprobs` (the prompt and the answer), the end of their text,
    and the text generated after them."""
    lists = choice.get("prompt_logprobs")
    if not isinstance(lists, list) or not lists:
        raise _UnreadableError(
            "the server's answer has no prompt_logprobs (vLLM's extension; other servers ignore it)"
        )
    ids = choice.get("prompt_token_ids")  # vLLM gives them with `return_token_ids`
    ids = ids if isinstance(ids, list) and len(ids) == len(lists) else None
    positions: list[_Position] = []
    offset = 0
    for i, entry in enumerate(lists):
        position = _listed_position(entry, None if ids is None else ids[i], offset)
        positions.append(position)
        offset += len(position.token)
    return positions, offset, str(choice.get("text") or "")


def _listed_position(entry: Any, token_id: Any, offset: int) -> _Position:
    """One `prompt_logprobs` entry: the top-1 is rank 1; the prompt's own token is the one its id
    names, or else the only entry (it is the top-1) or the other of two (it is not)."""
    if entry is None:
        return _Position("", offset, None, None)  # the first token: nothing predicts it
    if not isinstance(entry, Mapping) or not entry or not all(isinstance(v, Mapping) for v in entry.values()):
        raise _UnreadableError(f"a prompt_logprobs entry is not token ids with logprobs: {str(entry)[:200]}")
    top = min(entry, key=lambda key: (entry[key].get("rank") or 1e9, -(entry[key].get("logprob") or -1e9)))
    if token_id is not None and str(token_id) in entry:
        own = str(token_id)
    elif len(entry) <= 2:
        own = next((key for key in entry if key != top), top)
    else:
        raise _UnreadableError(
            "prompt_logprobs lists more than the top-1 and no prompt_token_ids name the token read"
        )
    text = str(entry[own].get("decoded_token") or "")
    return _Position(text, offset, str(entry[top].get("decoded_token") or ""), own == top)


def _verdict(
    positions: Sequence[_Position], end: int, answer: str, *, ended: bool, generated: str, prompt_tokens: Any
) -> ServerVerdict:
    """Put the positions on the answer by their offsets, counted back from the answer's end, and
    compare each with the server's top-1."""
    start = end - len(answer)
    inside = [p for p in positions if start <= p.offset < end and p.token]
    across = [p for p in positions if p.offset < start < p.offset + len(p.token)]
    if across:
        return ServerVerdict(
            verified=False,
            reason=f"the server reads the prompt's end and the answer's start as one token "
            f"({across[0].token!r}), not the prompt as decoding reads it",
        )
    if not answer or "".join(p.token for p in inside) != answer:
        return ServerVerdict(verified=False, reason="the server's tokens do not spell the answer")
    count = len(inside)
    told: dict[str, Any] = {
        "answer_tokens": count,
        "input_tokens": prompt_tokens - count if isinstance(prompt_tokens, int) else None,
    }
    for k, position in enumerate(inside):
        if position.agrees is None:
            return ServerVerdict(
                verified=False, verified_tokens=k, reason=f"no top-1 at answer token {k}", **told
            )
        if not position.agrees:
            why = f"at answer token {k} of {count} the server's top-1 is {position.top!r}, not "
            why += f"{position.token!r}"
            return ServerVerdict(verified=False, verified_tokens=k, reason=why, **told)
    if not ended:
        why = f"after the answer the model writes {generated!r}, not its end"
        return ServerVerdict(verified=False, verified_tokens=count, reason=why, **told)
    return ServerVerdict(verified=True, verified_tokens=count, **told)


class ServerVerifier:
    """Verifies answers to one variant's prompts through its server (see the module docstring)."""

    def __init__(self, *, form: str, forcing: OpenAIForcing, extra_body: Mapping[str, Any]) -> None:
        """Args:
        form: `echo` or `prompt_logprobs`.
        forcing: The variant's forcing, for its prompt text and its requests (its client's
            timeout is the request's).
        extra_body: The variant's fields sent with every generation request.
        """
        self.form = form
        self.forcing = forcing
        self.extra_body = dict(extra_body)

    def verify(self, messages: Sequence[BaseMessage], answer: str) -> ServerVerdict:
        """The server's verdict on `answer` to `messages`, or why there is none (never raises)."""
        try:
            prompt = self.forcing.prompt(messages)
        except BackendError as exc:
            return ServerVerdict(verified=False, reason=f"the prompt text could not be asked for: {exc}")
        if prompt is None:
            return ServerVerdict(verified=False, reason=UNKNOWN_PROMPT)
        body = verification_body(self.form, prompt, answer, seed=self.forcing.seed, extra=self.extra_body)
        try:
            response = self.forcing.post(
                f"{self.forcing.base_url}/completions", {"model": self.forcing.model, **body}
            )
        except BackendError as exc:
            return ServerVerdict(verified=False, reason=f"the verification request failed: {exc}")
        assert response is not None
        return read_verdict(self.form, response, prompt, answer)


class VerifyingChatModel(StreamingChatModel):
    """An `openai:` variant's chat model with `verify`: given an answer (`VERIFY_KWARG`), it asks the
    server's verdict first and answers with the given text when verified, else decodes through
    `decoder`. The answer's metadata says how it was obtained (`obtained`, `answer_tokens`,
    `verified_tokens`, `unverified_reason`, and `verification_s`, the request's seconds, within the
    attempt's time).

    Attributes:
        decoder: The variant's chat model that decodes (`OpenAIServerChatModel`).
        verifier: The server's verdicts.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    decoder: BaseChatModel
    verifier: ServerVerifier

    @property
    def _llm_type(self) -> str:
        return "quantgate-openai-verifying"

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        given = kwargs.pop(VERIFY_KWARG, None)
        kwargs.pop(TOP_LOGPROBS_KWARG, None)  # a reference's fidelity lists: the server keeps none
        answer = given.get("text") if isinstance(given, Mapping) else given
        if not isinstance(answer, str):
            yield from self._decoded(messages, stop, kwargs, {"obtained": "decoded"})
            return
        started = time.perf_counter()
        verdict = self.verifier.verify(messages, answer)
        told = {"answer_tokens": verdict.answer_tokens, "verified_tokens": verdict.verified_tokens,
                "verification_s": time.perf_counter() - started}  # fmt: skip
        if not verdict.verified:
            why = {"obtained": "decoded", "unverified_reason": f"{verdict.reason}: {DECODED}", **told}
            yield from self._decoded(messages, stop, kwargs, why)
            return
        if run_manager:
            run_manager.on_llm_new_token(answer)
        yield ChatGenerationChunk(message=AIMessageChunk(content=answer))
        read, count = verdict.input_tokens or 0, verdict.answer_tokens or 0
        usage = UsageMetadata(input_tokens=read, output_tokens=count, total_tokens=read + count)
        metadata = {"finish_reason": "stop", "obtained": "verified", **told}
        last = AIMessageChunk(content="", usage_metadata=usage, response_metadata=metadata)
        yield ChatGenerationChunk(message=last)

    def _decoded(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        kwargs: dict[str, Any],
        told: dict[str, Any],
    ) -> Iterator[ChatGenerationChunk]:
        """The decoder's stream, then a chunk with how the answer was obtained."""
        for chunk in self.decoder.stream(messages, stop=stop, **kwargs):
            yield ChatGenerationChunk(message=chunk)
        kept = {key: value for key, value in told.items() if value is not None}
        yield ChatGenerationChunk(message=AIMessageChunk(content="", response_metadata=kept))


def server_verifier(
    variant: Variant,
    endpoint: tuple[str, str, str | None],
    *,
    render: Callable[[Sequence[BaseMessage]], str] | None,
    extra_body: Mapping[str, Any],
) -> ServerVerifier | None:
    """The variant's verifier when its `verify` option is set (`render`: the prompt text it reads, when
    quantgate renders it; else the server's `/apply-template`), its request within `timeout_s`; None
    when `verify` is off.

    Raises:
        BackendError: `verify` with `native_tools`, whose answers are the server's parsed tool calls.
    """
    options = options_of(variant, OpenAIOptions)
    if options.verify == "off":
        return None
    if options.native_tools:
        raise BackendError(
            f"variant {variant.name}: verify = {options.verify!r} reads the answer's text, and with "
            "native_tools the answer is the server's parsed tool calls: remove one of them"
        )
    base_url, model, key = endpoint
    forcing = OpenAIForcing(
        base_url=base_url,
        model=model,
        api_key=key,
        timeout_s=options.timeout_s,
        seed=options.seed,
        render=render,
    )
    return ServerVerifier(form=options.verify, forcing=forcing, extra_body=extra_body)
