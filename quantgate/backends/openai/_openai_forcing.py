"""Teacher forcing through an OpenAI-compatible server, from the top-k log-probabilities it returns.

Two ways:

1. **Resumed greedy completion** (`/v1/completions`, `logprobs: k`), the default: as
   `OllamaForcing` does over Ollama's chat, but resuming is exact, the target so far is appended
   to the prompt text.
2. **Echo** (`/v1/completions` with `echo: true, logprobs: k`), when asked for (`echo=True`) and
   the server answers it: the prompt and the whole target are sent as one text, and the server
   returns the top-k list at every token of it, the target's included. One request per case
   scores the target directly, as embedded teacher forcing does; the server tokenizes the target
   itself (canonically, which may differ from the tokens a model generated). Not the default:
   `llama_cpp.server` builds each position's list in Python by sorting the whole vocabulary
   (262,144 tokens for Gemma 3), prompt positions included, and one echo of an 875-token
   restaurants prompt had not finished after 10 minutes on 2 cores (its model evaluation took
   9 s); servers that compute prompt log-probabilities natively (vLLM) may find it faster (not
   checked here).

Both need the prompt text the variant's server reads: a `render` callable given by the caller (a
variant with `api = "completions"`, whose prompt quantgate renders), else llama.cpp's
`POST /apply-template` when the server has it (`llama_cpp.server` has not: it answers 404). When
neither gives it, the forcing raises `BackendError` (`UNKNOWN_PROMPT`) and the variant is not
measured. Resuming over the chat API (the target so far sent as a final assistant message) is no
way: on `llama_cpp.server` serving a GGUF with no chat template (its fallback llama-2 format) the
message is closed (`</s>[/INST]`) and a new answer begins, so its lists do not follow the target
(checked on Gemma 3 270M Q4_K_M: after a final assistant message the chat answer's greedy text and
its first top-5 tokens were those of the closed llama-2 prompt, log-probabilities within 0.05, and
not those of the continued one, whose first token differed). llama.cpp's `llama-server` has
`/apply-template`, so its prompt text is known; it answers `logprobs` on `/v1/completions` in the
chat API's form and does not echo (both measured on the llama.cpp llama-cpp-python 0.3.36 vendors).

Positions and their lists are `ForcedPositions`, as `OllamaForcing` gives them (see
`ollama_forcing` for how a walk follows a target); `measure_ollama_token_fidelity` compares them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import httpx
from langchain_core.messages import BaseMessage

from quantgate.backends import BackendError
from quantgate.backends._backend_options import DEFAULT_TOP_LOGPROBS, options_of
from quantgate.backends._forcing import (
    ForcedPositions,
    Forcing,
    LogprobsForcing,
    TopLogprobs,
    Walk,
    chat_messages,
)
from quantgate.backends._server_fields import described, refusal
from quantgate.backends.openai._openai_options import OpenAIOptions
from quantgate.inputs._variants import Variant

CHUNK_TOKENS = 32
"""Tokens asked for per greedy request: a divergence wastes at most this many generated tokens."""

_GREEDY = {"repeat_penalty": 1.0}
"""Sent with every request: llama.cpp's servers penalize repeats by default (`llama_cpp.server`:
1.1), which makes their temperature-0 token differ from the top of the distribution they report
(seen on Gemma 3 270M: ' model' repeated became '-'); other servers ignore the field."""

Step = tuple[str, TopLogprobs]
"""One generated token and its top-k list."""

UNKNOWN_PROMPT = (
    "the server's prompt text is unknown (the chat API applies the server's own template, and the "
    'server has no /apply-template): use api = "completions" or a server with /apply-template'
)
"""Why a forcing with no prompt text cannot follow a target."""


def completion_steps(response: dict[str, Any], top_k: int) -> list[Step]:
    """The tokens and top-k lists of a `/v1/completions` answer (`logprobs: k`), in order.

    llama-cpp-python adds the chosen token to each list even when it is not among the k most
    likely; lists are cut back to the k most likely so every way gives top-k lists. A token
    with no list (the first token of an echo) gets an empty one. llama.cpp's `llama-server`
    answers in the chat API's form (`logprobs.content`: each token with its `top_logprobs` list).
    """
    logprobs = _first_choice(response).get("logprobs") or {}
    if isinstance(logprobs.get("content"), list):
        return [_content_step(entry, top_k) for entry in logprobs["content"]]
    tokens = logprobs.get("tokens") or []
    tops = logprobs.get("top_logprobs") or [None] * len(tokens)
    return [(token, _cut(top or {}, top_k)) for token, top in zip(tokens, tops, strict=True)]


def _content_step(entry: Any, top_k: int) -> Step:
    """One token of the chat API's form of logprobs: `{"token", "logprob", "top_logprobs": [{"token",
    "logprob"}, ...]}`."""
    listed = entry.get("top_logprobs") if isinstance(entry, dict) else None
    if not isinstance(entry, dict) or not isinstance(listed or [], list):
        raise BackendError(
            f"the server's logprobs are not tokens with top_logprobs lists: {str(entry)[:200]}"
        )
    scored = [t for t in listed or [] if isinstance(t, dict) and isinstance(t.get("logprob"), int | float)]
    top = {str(t.get("token", "")): t["logprob"] for t in scored}
    return str(entry.get("token", "")), _cut(top, top_k)


def echoed_target(response: dict[str, Any], prompt: str, target: str, top_k: int) -> list[Step] | None:
    """The target's tokens and lists from an echo of `prompt + target`; None when the server did
    not echo, or no run of its last tokens spells the target (then the caller walks instead).

    The target's tokens are found from the end: the tokens generated after it (`usage`'s
    `completion_tokens`) are dropped, then tokens are taken back until they spell the target.
    Offsets cannot find it: llama-cpp-python counts them in the text without special tokens.
    """
    choice = _first_choice(response)
    if not str(choice.get("text", "")).startswith(prompt + target):
        return None
    generated = (response.get("usage") or {}).get("completion_tokens")
    steps = completion_steps(response, top_k)
    if not isinstance(generated, int) or generated > len(steps):
        return None
    steps = steps[: len(steps) - generated]
    spelled = ""
    for start in range(len(steps) - 1, -1, -1):
        spelled = steps[start][0] + spelled
        if len(spelled) >= len(target):
            return steps[start:] if spelled == target else None
    return None


def _first_choice(response: dict[str, Any]) -> dict[str, Any]:
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BackendError(f"the server's answer has no choices: {str(response)[:200]}")
    return choices[0]


def _cut(top: dict[str, float], k: int) -> TopLogprobs:
    return dict(sorted(((str(t), float(p)) for t, p in top.items()), key=lambda item: -item[1])[:k])


class OpenAIForcing:
    """Teacher forcing against one model of an OpenAI-compatible server (see the module docstring)."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        top_logprobs: int = DEFAULT_TOP_LOGPROBS,
        timeout_s: float = 300.0,
        seed: int = 0,
        render: Callable[[Sequence[BaseMessage]], str] | None = None,
        echo: bool = False,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """Connect to a server.

        Args:
            base_url: The server's OpenAI API root, ending in /v1.
            model: The server's model name.
            api_key: Sent as a bearer token when given.
            top_logprobs: How many most likely tokens to ask for at each position.
            timeout_s: Per-request timeout.
            seed: Sent with every request (temperature is 0).
            render: The prompt text the server reads for messages; None to ask the server
                (`/apply-template`).
            echo: Try scoring each target in one echo request first (see the module docstring).
            transport: An httpx transport (tests).
        """
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.top_logprobs = top_logprobs
        self.seed = seed
        self.render = render
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(headers=headers, timeout=timeout_s, transport=transport)
        self.echo: bool | None = None if echo else False
        """Whether the server echoes the prompt's log-probabilities: None until asked once; False
        when not asked for."""
        self.template: bool | None = None
        """Whether the server has `/apply-template`: None until asked once."""
        self.way = ""
        """The way the last walk took: `echo` or `completions`."""

    def follow_text(self, messages: Sequence[BaseMessage], target: str) -> ForcedPositions:
        """The model's top-k lists along `target` (the reference's own output)."""
        return self._follow(messages, Walk(target=target, tokens=None))

    def follow_tokens(self, messages: Sequence[BaseMessage], tokens: Sequence[str]) -> ForcedPositions:
        """The model's top-k lists along the reference's token sequence."""
        return self._follow(messages, Walk(target="".join(tokens), tokens=tokens))

    def prompt(self, messages: Sequence[BaseMessage]) -> str | None:
        """The prompt text of `messages`, or None when neither `render` nor the server gives it."""
        if self.render is not None:
            return self.render(messages)
        if self.template is False:
            return None
        root = self.base_url.removesuffix("/v1")
        answer = self.post(f"{root}/apply-template", {"messages": chat_messages(messages)}, absent_ok=True)
        self.template = answer is not None and isinstance(answer.get("prompt"), str)
        return str(answer["prompt"]) if answer is not None and self.template else None

    def _follow(self, messages: Sequence[BaseMessage], walk: Walk) -> ForcedPositions:
        prompt = self.prompt(messages)
        if prompt is None:
            raise BackendError(f"{self.model} at {self.base_url}: {UNKNOWN_PROMPT}")
        if self.echo is not False:
            scored = self._echoed(prompt, walk)
            if scored is not None:
                self.way = "echo"
                return scored
        self.way = "completions"
        while not walk.finished():
            walk.requests += 1
            budget = len(walk.tokens) - len(walk.chosen) if walk.tokens is not None else len(walk.target)
            budget = max(1, min(budget, CHUNK_TOKENS))
            steps = completion_steps(self._complete(prompt + walk.prefix, budget), self.top_logprobs)
            if _resume(steps, walk, budget) == "ended":
                walk.skip()
        return walk.result()

    def _echoed(self, prompt: str, walk: Walk) -> ForcedPositions | None:
        """The walk scored in one echo request; None when the server does not echo or its tokens
        are not the walk's (then the caller walks)."""
        response = self._complete(prompt + walk.target, 1, echo=True)
        steps = echoed_target(response, prompt, walk.target, self.top_logprobs)
        self.echo = str(_first_choice(response).get("text", "")).startswith(prompt)
        tokens = tuple(token for token, _ in steps or [])
        if steps is None or (walk.tokens is not None and tokens != tuple(walk.tokens)):
            return None
        return ForcedPositions(tokens=tokens, top=tuple(top or None for _, top in steps), requests=1)

    def _complete(self, prompt: str, max_tokens: int, *, echo: bool = False) -> dict[str, Any]:
        body = {"model": self.model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0,
                "seed": self.seed, "logprobs": self.top_logprobs, "echo": echo, **_GREEDY}  # fmt: skip
        answer = self.post(f"{self.base_url}/completions", body)
        assert answer is not None
        return answer

    def post(self, url: str, body: dict[str, Any], *, absent_ok: bool = False) -> dict[str, Any] | None:
        """The JSON answer; None for a 404 when `absent_ok` (an endpoint the server does not have)."""
        try:
            response = self.client.post(url, json=body)
        except httpx.HTTPError as exc:
            raise BackendError(f"OpenAI-compatible server at {self.base_url} ({self.model}): {exc}") from exc
        if absent_ok and response.status_code in (404, 405, 501):
            return None
        if response.status_code != 200:
            raise BackendError(
                f"OpenAI-compatible server at {self.base_url} ({self.model}) answered {response.status_code} "
                f"to {url.rsplit('/', 1)[-1]}: {refusal(response)}"
            )
        try:
            answer = response.json()
        except ValueError as exc:
            raise BackendError(f"{url} answered {described(response)}, not JSON") from exc
        if not isinstance(answer, dict):
            raise BackendError(f"{url} answered a JSON {type(answer).__name__}, not a JSON object")
        return answer


def _resume(steps: Sequence[Step], walk: Walk, budget: int) -> str:
    """Follow one answer: `done` (target covered), `diverged`, `more` (the answer used its whole
    budget along the target: ask again) or `ended` (the model ended before the target did)."""
    if budget and not steps:
        return "ended"
    for token, top in steps:
        expected = walk.expected(token, top)
        walk.chosen.append(expected)
        walk.top.append(top or None)
        if token != expected:
            return "diverged"
        if walk.finished():
            return "done"
    return "more" if len(steps) >= budget else "ended"


OPENAI_METHOD = (
    "top-{k} log-probabilities from an OpenAI-compatible server: each model follows the reference's "
    "output after the prompt text of the case's first attempt by resumed greedy completion with "
    "logprobs on /v1/completions (the output so far appended to the prompt after each disagreement; "
    "with logprobs_echo, one echo request per case where the server answers it); per output position "
    "a lower bound of "
    "KL(reference || variant) from the two top-{k} lists (tokens outside both merged into one bucket, "
    "nats) and top-1 agreement, pooled over positions"
)

FORCING_TIMEOUT_S = 300.0
"""A forcing call's time limit when the variant's `timeout_s` does not say."""


def openai_forcing(variant: Variant) -> OpenAIForcing:
    """The forcing of an OpenAI-compatible variant: its endpoint, the prompt text it reads, its options.

    Raises:
        BackendError: Options it cannot take (`base_url`, `api_key_env`, `api`).
    """
    from quantgate.backends.openai._openai import completion_prompt, openai_endpoint

    base_url, model, api_key = openai_endpoint(variant)
    options = options_of(variant, OpenAIOptions)
    return OpenAIForcing(
        base_url=base_url,
        model=model,
        api_key=api_key,
        top_logprobs=options.top_logprobs,
        timeout_s=options.timeout_s if "timeout_s" in options.model_fields_set else FORCING_TIMEOUT_S,
        seed=options.seed,
        render=completion_prompt(variant),
        echo=options.logprobs_echo,
    )


NATIVE_TOOLS_UNFOLLOWED = (
    "not measured: with native_tools the answer is the server's parsed tool calls, written back as "
    "the record, not the text the model wrote, and the forcing sends no tools"
)
"""Why a variant (or a reference) with `native_tools` has no token fidelity."""


def api_mismatch(variant: Variant, reference: Variant) -> str | None:
    """Why the variant and the reference read different prompts: different `api` options (a chat
    variant reads the server's template, a completions variant the text quantgate renders), or
    native tools on either (`NATIVE_TOOLS_UNFOLLOWED`)."""
    read, given = options_of(variant, OpenAIOptions), options_of(reference, OpenAIOptions)
    if read.native_tools or given.native_tools:
        return NATIVE_TOOLS_UNFOLLOWED
    ours, theirs = read.api, given.api
    if ours == theirs:
        return None
    return (
        f'not measured: the reference reads its prompt through api = "{theirs}" and this '
        f'variant through api = "{ours}"; both must use the same api to read the same prompt'
    )


def unknown_prompt(forcing: Forcing, messages: Sequence[BaseMessage]) -> str | None:
    """Why an OpenAI-compatible forcing cannot follow a target: its prompt text is unknown."""
    if isinstance(forcing, OpenAIForcing) and forcing.prompt(messages) is None:
        return UNKNOWN_PROMPT
    return None


CHAT_API_MEMBER = (
    "the variant uses the chat API, whose prompt text is the server's chat template, not the embedded "
    'base\'s; set its option api = "completions" to compare the same prompt'
)
"""Why a chat-API variant cannot be a runtime pair's member."""


def pair_member_forcing(variant: Variant) -> OpenAIForcing:
    """A runtime pair's member: its forcing along the prompt text quantgate renders, generating one
    token at a time (no echo: a runtime pair compares the server's own generation).

    Raises:
        BackendError: The variant reads its prompt through the chat API, or an option it cannot take.
    """
    from quantgate.backends.openai._openai import completion_prompt

    render = completion_prompt(variant)
    if render is None:
        raise BackendError(CHAT_API_MEMBER)
    forcing = openai_forcing(variant)
    forcing.render = forcing.render or render
    forcing.echo = False
    return forcing


LOGPROBS_FORCING = LogprobsForcing(
    make=openai_forcing,
    method=OPENAI_METHOD,
    prompt_mismatch=api_mismatch,
    unfollowable=unknown_prompt,
    pair_member=pair_member_forcing,
)
"""The OpenAI-compatible backend's capability for token fidelity (and any backend's that speaks its API)."""
