"""The OpenAI-compatible backend's options, typed (`OpenAIOptions`): a variant's `options` table as it
reads them. The endpoint's own checks (`openai_endpoint`: an http(s) `base_url`, an `api_key_env`
naming a set variable) and the choices of `api` and `response_format` keep their messages there."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from quantgate.backends._backend_options import DEFAULT_TOP_LOGPROBS, ServedModelOptions
from quantgate.backends._streaming import DEFAULT_FIRST_TOKEN_TIMEOUT_S, DEFAULT_TIMEOUT_S

__all__ = ["OpenAIOptions"]


class OpenAIOptions(ServedModelOptions):
    """An OpenAI-compatible variant's options; a key it does not name is refused (request fields for the
    server go in `extra_body`)."""

    base_url: str | None = None
    """The server's OpenAI API root, e.g. `http://127.0.0.1:8000/v1`."""
    api_key_env: str | None = None
    """The environment variable that holds the API key."""
    api: str = "chat"
    """`chat` (the server's template) or `completions` (quantgate's plain prompt)."""
    response_format: str = "auto"
    """How the dataset's JSON schema is sent (see `RESPONSE_FORMATS`, `COMPLETION_FORMATS`)."""
    extra_body: Any = None
    """Fields sent with every generation request (a table; `extra_body_option` checks it)."""
    max_tokens: int = Field(512, ge=1)
    seed: int = 0
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0)
    """The whole answer's time limit (a token-fidelity forcing call's is 300 s unless this is given)."""
    first_token_timeout_s: float = Field(DEFAULT_FIRST_TOKEN_TIMEOUT_S, gt=0)
    """The first token's time limit."""
    top_logprobs: int = Field(DEFAULT_TOP_LOGPROBS, ge=1, le=20)
    """Log-probabilities per position when token fidelity forces the model."""
    logprobs_echo: bool = False
    """Token fidelity asks the server to echo the prompt's log-probabilities (one request per case)."""
    native_tools: bool = False
    """A tool-calling task's tools go as the request's `tools`, read by the server's tool-call parser
    (`quantgate.backends.openai._openai_tools`), instead of the record schema as `response_format`."""

    verify: Literal["off", "echo", "prompt_logprobs"] = "off"
    """How the variant verifies the reference's answers through the server, in one `/v1/completions`
    request of the prompt and the answer (`quantgate.backends.openai._openai_verify`): `echo` (the legacy
    `echo` with `logprobs`), `prompt_logprobs` (vLLM's extension), or `off` (every case decoded)."""

    def verification(self) -> bool | None:
        """True with `verify` set (and no `native_tools`, whose answers are parsed tool calls, not text)."""
        return self.verify != "off" and not self.native_tools

    def environment_options(self) -> dict[str, str]:
        """`api_key_env` and the variable that holds the API key, when the variant names one."""
        return {} if self.api_key_env is None else {"api_key_env": self.api_key_env}
