"""One streamed chat call to an OpenAI-compatible server: named failures, time limits, and the
output tokens counted when the server does not report them.

`OpenAIServerChatModel` wraps LangChain's `ChatOpenAI` (whose real client makes the call) and turns
what can go wrong into `ModelCallError`s with a kind (`classify`), which the extraction graph
retries when a retry can help and otherwise records on the case:

- `connection`: nothing listens at the base URL, or the connection dropped before an answer;
- `timeout`: the time limits of `quantgate.backends._streaming.TimedChatModel` broken (no byte for
  `min(first_token_timeout_s, timeout_s)` seconds, or an answer still streaming after `timeout_s`);
- `unauthorized` (401/403: the API key), `not_found` (404: the model or the path), `busy` (429,
  503), `server_error` (other 5xx), `bad_request` (other 4xx), each with the body's message;
- `bad_response`: a 200 whose body is not the API's JSON or event stream (an HTML page: a base URL
  that is not the API's root); a 4xx/5xx answered with an HTML page says so in its message;
- `stream_cut`: the stream broke (the server died mid-answer, or closed it without a
  `finish_reason`); `stream_error`: an error event inside a 200 stream.

llama.cpp's servers send no usage in a stream (`stream_options.include_usage` is ignored), so when
the server reports none the output tokens are the streamed content chunks, one token each there.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk

from graphs.streamed import ModelCallError
from quantgate.backends._native_tools import is_malformed_call, tool_answer
from quantgate.backends._server_fields import described, error_message
from quantgate.backends._streaming import TimedChatModel, status_error

__all__ = ["OpenAIServerChatModel", "classify", "probe_refusal"]


def _named(exc: BaseException, *names: str) -> bool:
    """`exc` is one of httpx's exceptions `names` (the openai client uses `httpx` or its fork
    `httpx2`, whose classes are not httpx's), by the class names in its ancestry."""
    return any(cls.__name__ in names and cls.__module__.startswith("httpx") for cls in type(exc).__mro__)


def _body_message(exc: Any) -> str:
    """The error message of a 4xx/5xx answer: the JSON body's `error.message` (or `error`,
    `detail`), else what the body was (an HTML page: a proxy, or not an OpenAI API?), never
    quoting it (`quantgate.backends._server_fields`). The openai client gives the error the body's
    `error` object alone (`{"message": ...}`), not the whole body."""
    body = getattr(exc, "body", None)
    message = error_message(body) or (error_message({"error": body}) if isinstance(body, dict) else None)
    if message is not None:
        return message
    response = getattr(exc, "response", None)
    if response is None:
        return "no error message"
    note = described(response)
    if note.startswith("an HTML page"):
        size = len(response.content)
        return f"an HTML page, not the API's JSON ({size} bytes): a proxy, or not an OpenAI API?"
    return f"{note}, not the API's JSON"


def classify(exc: BaseException) -> ModelCallError:
    """Name a failed call to an OpenAI-compatible server and say whether a retry can help."""
    import openai

    if isinstance(exc, ModelCallError):
        return exc
    if isinstance(exc, openai.APIStatusError):
        return status_error(
            exc.status_code, _body_message(exc), unauthorized="check the variable api_key_env names"
        )
    if isinstance(exc, openai.APITimeoutError) or _named(exc, "TimeoutException"):
        return ModelCallError("timeout", f"timed out: {exc}", retryable=True)
    if isinstance(exc, openai.APIConnectionError) or _named(exc, "ConnectError") or isinstance(exc, OSError):
        cause = exc.__cause__ or exc
        return ModelCallError("connection", f"server not reachable: {cause}", retryable=True)
    if _named(exc, "RemoteProtocolError", "ReadError", "StreamError"):
        return ModelCallError("stream_cut", f"the answer stream was cut: {exc}", retryable=True)
    if isinstance(exc, openai.APIError):  # an error event inside a 200 stream
        told = error_message({"error": exc.message}) or "no message"
        what = f"the server reported an error in the middle of its answer: {told}"
        return ModelCallError("stream_error", what, retryable=True)
    if isinstance(exc, json.JSONDecodeError | openai.APIResponseValidationError):
        what = f"the server's answer is not the OpenAI API's JSON ({exc}); is base_url the API's root (/v1)?"
        return ModelCallError("bad_response", what, retryable=False)
    return ModelCallError("backend_error", f"{type(exc).__name__}: {exc}", retryable=False)


_PROBE = [HumanMessage("Answer with an empty JSON object.")]


def probe_refusal(chat: Any) -> ModelCallError | None:
    """The server's answer to a one-token call: None when it took it, or when the call could not
    tell (a silent server, a busy one or a gateway's page are the cases' to meet, with their
    retries and their error kinds); else why the call failed: nothing listening, or a refusal (a
    4xx, or a 500 with the API's JSON body, as llama-cpp-python answers a `response_format` it
    does not know)."""
    import openai

    try:
        for _ in chat.stream(_PROBE):
            pass
    except openai.APITimeoutError:
        return None
    except openai.APIConnectionError as exc:  # nothing listens there: the variant cannot be served
        return classify(exc)
    except openai.APIStatusError as exc:
        refused = (400 <= exc.status_code < 500 and exc.status_code != 429) or exc.status_code == 500
        return classify(exc) if refused and isinstance(exc.body, dict) else None
    except Exception:
        return None
    return None


def _as_chunk(message: BaseMessage) -> AIMessageChunk:
    """A stream's chunk, or a whole answer (a call made without streaming: native tools) as the one
    chunk of its stream, its tool calls, usage and finish reason kept."""
    if isinstance(message, AIMessageChunk):
        return message
    return AIMessageChunk(**message.model_dump(exclude={"type"}))


def _is_timeout(exc: BaseException) -> bool:
    """The client's read timeout: before the answer began (the openai client's `APITimeoutError`)
    or while it streamed (httpx's)."""
    import openai

    return isinstance(exc, openai.APITimeoutError | TimeoutError) or _named(exc, "TimeoutException")


class OpenAIServerChatModel(TimedChatModel):
    """`ChatOpenAI` whose failures and slowness are raised as `ModelCallError`s (see the module).

    Attributes:
        inner: The `ChatOpenAI` that makes the call (streaming; no retries of its own; the time
            limits: `TimedChatModel`).
        base_url: The server, for messages.
        tool_calls: With native tools (`quantgate.backends.openai._openai_tools`), how many calls the
            task's record holds (`"one"`, `"many"`): the answer's tool calls are read back into it
            (`tool_answer`); None: the answer's text is the record.
    """

    base_url: str = ""
    tool_calls: Literal["one", "many"] | None = None

    @property
    def _llm_type(self) -> str:
        return "quantgate-openai"

    @property
    def server(self) -> str:
        return self.base_url

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        answer = self._answer(messages, stop, **kwargs)
        return answer if self.tool_calls is None else tool_answer(answer, many=self.tool_calls == "many")

    def _answer(
        self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        events, chunks, usage, finished = 0, 0, False, False
        for streamed in self._timed(messages, stop, **kwargs):
            chunk = _as_chunk(streamed)
            events += 1
            chunks += 1 if chunk.content else 0
            usage = usage or bool(chunk.usage_metadata)
            finished = finished or bool(chunk.response_metadata.get("finish_reason"))
            yield ChatGenerationChunk(message=chunk)
        if not finished:
            raise self._unfinished(events, chunks)
        if not usage:
            counted = {"input_tokens": 0, "output_tokens": chunks, "total_tokens": chunks}
            yield ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata=counted))  # type: ignore[arg-type]

    def _is_silence(self, exc: BaseException) -> bool:
        return _is_timeout(exc)

    def _failure(self, exc: Exception, received: int) -> BaseException:
        if self.tool_calls is not None and is_malformed_call(exc):
            return exc  # an answer, not a failure of the call: `tool_answer` records it
        if received == 0 and "No generation chunks" in str(exc):  # LangChain's word for an empty stream
            return self._unfinished(0, 0)
        return classify(exc)

    def _unfinished(self, events: int, chunks: int) -> ModelCallError:
        """No event at all: not the API's stream; some, then an end without a `finish_reason`: cut
        (llama-cpp-python ends a stream so when another request arrives, unless started with
        `--interrupt_requests False`)."""
        if events == 0:
            what = (
                f"{self.base_url} answered no chat completion events (an HTML page or other body?): is "
                "base_url the OpenAI API's root, e.g. http://host:8000/v1?"
            )
            return ModelCallError("bad_response", what, retryable=False)
        what = (
            f"the answer stream from {self.base_url} ended after {chunks} tokens without a finish_reason "
            "(llama-cpp-python's server does so when another request arrives: --interrupt_requests False)"
        )
        return ModelCallError("stream_cut", what, retryable=True)
