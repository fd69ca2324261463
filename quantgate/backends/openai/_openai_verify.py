"""Verification through an OpenAI-compatible server: an `openai:` variant with the option `verify`
reads the reference's answer in ONE `/v1/completions` request instead of writing its own.

The request's prompt is the text the variant reads (`OpenAIForcing.prompt`: the completions API's
rendered prompt, or the server's `/apply-template`) followed by the answer, with `max_tokens: 1`,
temperature 0, the variant's seed and `extra_body`, no grammar, `logprobs: 1`, and the server's
log-probabilities of that given text: `echo: true` (`verify = "echo"`, OpenAI's legacy form, which
llama-cpp-python's `llama_cpp.server` and vLLM answer; llama.cpp's `llama-server` ignores it) or
`prompt_logprobs: 1` (`verify = "prompt_logprobs"`, vLLM's extension). How the answer is read from
them is `quantgate.backends.openai._openai_verdict`.

The answer is verified when at every position of its text the server's top-1 token is the token
there and the one token generated after it ends the answer (`finish_reason` "stop"): the top-1
unconstrained equal to the answer's token is the grammar-constrained greedy choice too, since the
reference wrote the answer under the same schema. Then the answer's text is the generation and
nothing is decoded. Otherwise the variant decodes the whole answer as it would have (a server cannot
resume a grammar mid-answer), and the attempt says why (`unverified_reason`) and where the first
difference was (`verified_tokens`). A server error, a timeout or an answer without the lists also
falls back to decoding, with the reason. The lists are the model's distribution before the server's
samplers: with llama.cpp's servers set `extra_body = {repeat_penalty = 1.0}`, as their greedy
decoding needs anyway.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGenerationChunk
from pydantic import ConfigDict

from quantgate.backends import LOOKUP_KWARG, TOP_LOGPROBS_KWARG, VERIFY_KWARG, BackendError, OpenedVariant
from quantgate.backends._backend_options import options_of
from quantgate.backends._streaming import StreamingChatModel
from quantgate.backends.openai._openai_completions import extra_body_option
from quantgate.backends.openai._openai_forcing import UNKNOWN_PROMPT, OpenAIForcing
from quantgate.backends.openai._openai_options import OpenAIOptions
from quantgate.backends.openai._openai_verdict import ServerVerdict, read_verdict
from quantgate.inputs._variants import Variant

__all__ = ["NO_VERIFICATION", "ServerVerifier", "VerifyingChatModel", "server_verifier", "verifying"]

NO_VERIFICATION = (
    'an openai variant verifies the reference\'s answers only with the option verify = "echo" or '
    '"prompt_logprobs", on a server that returns the log-probabilities of given text '
    "(docs/openai-servers.md)"
)
"""Why an `openai:` variant without `verify` decodes every case (the run's `verification_missing`)."""

DECODED = "the whole answer was decoded (a server cannot resume the grammar mid-answer)"
"""What follows every reason an answer was not verified."""


def verification_body(
    form: str, prompt: str, answer: str, *, seed: int, extra: Mapping[str, Any]
) -> dict[str, Any]:
    """The one request's fields (beside `model`) for `form` (`echo` or `prompt_logprobs`)."""
    body = {**extra, "prompt": prompt + answer, "max_tokens": 1, "temperature": 0.0, "seed": seed}
    body.update({"logprobs": 1, "stream": False})
    body.update({"echo": True} if form == "echo" else {"prompt_logprobs": 1})
    return body


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

    def close(self) -> None:
        """Close the connections to the server (when the variant closes)."""
        self.forcing.client.close()

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
        kwargs.pop(LOOKUP_KWARG, None)  # nor drafts from the prompt: the server decodes as it does
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


def server_verifier(variant: Variant) -> ServerVerifier | None:
    """The variant's verifier when its `verify` option is set, its request within `timeout_s`; None
    when `verify` is off. Asked before the variant opens.

    Raises:
        BackendError: `verify` with `native_tools`, whose answers are the server's parsed tool calls;
            the endpoint's options wrong (`openai_endpoint`).
    """
    from quantgate.backends.openai._openai import completion_prompt, openai_endpoint

    options = options_of(variant, OpenAIOptions)
    if options.verify == "off":
        return None
    if options.native_tools:
        raise BackendError(
            f"variant {variant.name}: verify = {options.verify!r} reads the answer's text, and with "
            "native_tools the answer is the server's parsed tool calls: remove one of them"
        )
    base_url, model, key = openai_endpoint(variant)
    forcing = OpenAIForcing(
        base_url=base_url,
        model=model,
        api_key=key,
        timeout_s=options.timeout_s,
        seed=options.seed,
        render=completion_prompt(variant),
    )
    return ServerVerifier(form=options.verify, forcing=forcing, extra_body=extra_body_option(variant))


def verifying(opened: OpenedVariant, verifier: ServerVerifier | None) -> OpenedVariant:
    """The opened variant whose chat models (for any schema) verify through `verifier` before they
    decode, `runtime.verify` the form; as it is when `verifier` is None."""
    if verifier is None:
        return replace(opened, runtime={**opened.runtime, "verify": "off"})
    for_schema = opened.for_schema

    def wrapped(decoder: BaseChatModel) -> VerifyingChatModel:
        return VerifyingChatModel(decoder=decoder, verifier=verifier)

    return replace(
        opened,
        chat_model=wrapped(opened.chat_model),
        runtime={**opened.runtime, "verify": verifier.form},
        for_schema=None if for_schema is None else lambda schema: wrapped(for_schema(schema)),
    )
