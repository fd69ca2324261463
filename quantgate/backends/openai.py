"""The OpenAI-compatible backend: `openai:MODEL@BASE_URL` variants served by any server that speaks
the OpenAI chat API (vLLM, llama.cpp's server, llama-cpp-python's `llama_cpp.server`, LM Studio),
through LangChain's `ChatOpenAI` with streaming.

A variant names the server's model (`model`) and its options `base_url` (required, ending in
`/v1`) and `api_key_env`: the name of an environment variable holding the key. The key itself is
read when the variant is opened and never written to `variants.json` or a log.
"""

from __future__ import annotations

import os

from quantgate.backends import BackendError
from quantgate.inputs.variants import Variant

__all__ = ["openai_endpoint"]


def openai_endpoint(variant: Variant) -> tuple[str, str, str | None]:
    """The server a variant talks to: its base URL (no trailing slash), the server's model name and
    the API key read from the variable its `api_key_env` option names (None when it names none).

    Raises:
        BackendError: No `base_url` option, one that is not an http(s) URL, or an `api_key_env`
            naming a variable that is not set.
    """
    base_url = variant.options.get("base_url")
    if not isinstance(base_url, str) or not base_url.strip():
        raise BackendError(
            f"variant {variant.name}: backend 'openai' needs the option base_url, the server's OpenAI API "
            'root, e.g. options.base_url = "http://127.0.0.1:8000/v1" (or openai:MODEL@BASE_URL)'
        )
    if not base_url.startswith(("http://", "https://")):
        raise BackendError(f"variant {variant.name}: base_url {base_url!r} is not an http:// or https:// URL")
    if not variant.model:
        raise BackendError(f"variant {variant.name}: backend 'openai' needs the server's model name as model")
    key_env = variant.options.get("api_key_env")
    if key_env is None:
        return base_url.rstrip("/"), variant.model, None
    if not isinstance(key_env, str) or not key_env:
        raise BackendError(
            f"variant {variant.name}: api_key_env must be the NAME of an environment variable, "
            f"got {key_env!r}"
        )
    key = os.environ.get(key_env)
    if not key:
        raise BackendError(
            f"variant {variant.name}: the environment variable {key_env} (its api_key_env option) is not "
            "set; "
            f"export {key_env}=<the server's API key>"
        )
    return base_url.rstrip("/"), variant.model, key
