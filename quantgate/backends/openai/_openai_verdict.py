"""A server's log-probabilities of given text read into a verdict on an answer (`ServerVerdict`), for
verification through an OpenAI-compatible server (`quantgate.backends.openai._openai_verify`, which
sends the request).

Two forms are read:

- `echo`: OpenAI's legacy form (`logprobs.tokens`, `token_logprobs`, `top_logprobs`, `text_offset`
  over the prompt, the answer and the token generated), which llama-cpp-python's `llama_cpp.server`
  and vLLM answer; the generated tokens are the last `usage.completion_tokens` (vLLM lists the end
  token it generated, llama-cpp-python does not, and each counts as it lists).
- `prompt_logprobs`: vLLM's extension: the choice's `prompt_logprobs` is a list with one entry per
  token read, `null` for the first, else a mapping of token id to `{"logprob", "rank",
  "decoded_token"}` holding the top-1 (rank 1) and the token read when it is not the top-1 (vLLM's
  `vllm/v1/engine/logprobs.py`, `_make_pos_logprob_dict`; `vllm/entrypoints/openai/completion/
  serving.py` puts `final_res.prompt_logprobs` in the choice).

The positions are put on the answer's text by their offsets, counted back from the end of the
answer: llama-cpp-python counts `text_offset` in the text without special tokens (so from the start
they do not match the prompt text), vLLM's are the running sum of the token strings; both agree with
the answer's own characters. A token across the prompt's end and the answer's start means the server
read the prompt otherwise than decoding does (decoding reads the prompt's tokens alone): that answer
is not verified.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from evaluators.errors import QuantgateError

__all__ = ["ServerVerdict", "read_verdict"]


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


class _UnreadableError(QuantgateError):
    """The server's answer does not give what verification needs (the message says what)."""


class _Position(NamedTuple):
    """One token the server read: its text, where it starts, the server's top-1 there (None: no list),
    and whether that top-1 is this token (None: no list)."""

    token: str
    offset: int
    top: str | None
    agrees: bool | None


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
