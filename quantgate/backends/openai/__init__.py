"""The OpenAI-compatible backend: a variant served by vLLM, llama.cpp's server, LM Studio, ...;
its chat and completion calls and the server's metadata.

`BACKEND` is its record (its capabilities, `CAPABILITIES`, and its options' model, `OpenAIOptions`),
named in the `quantgate.backends` entry-point group (pyproject.toml) like any plugin's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from quantgate.backends import OpenedVariant, RegisteredBackend
from quantgate.backends._declared_capabilities import BackendCapabilities
from quantgate.backends.openai._openai_forcing import LOGPROBS_FORCING
from quantgate.backends.openai._openai_options import OpenAIOptions
from quantgate.backends.openai._openai_verify import NO_VERIFICATION
from quantgate.inputs._variants import Variant

CAPABILITIES = BackendCapabilities(
    token_fidelity="logprobs", logprobs_forcing=LOGPROBS_FORCING, process_isolation=True, parallel="server",
    memory="server", json_schema=True, no_verification=NO_VERIFICATION,
)  # fmt: skip
"""An OpenAI-compatible server (`quantgate.backends.openai._openai`): it schedules concurrent requests
itself; JSON schema through `response_format` where the server takes it (the variant's
`runtime.decoding` says when it took none); token fidelity from the log-probabilities it returns,
where the prompt text it reads is known (`api = "completions"`, or a server with llama.cpp's
`/apply-template`; else the run says it is not measured); verification of the reference's answers
only with the variant's `verify` option (`OpenAIOptions.verification`)."""


@contextmanager
def open_served(
    variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
) -> Iterator[OpenedVariant]:
    """Open an OpenAI-compatible variant (see `quantgate.backends.openai._openai.open_openai`), verifying
    given answers through the server with its `verify` option (`quantgate.backends.openai._openai_verify`)."""
    from quantgate.backends.openai._openai import open_openai
    from quantgate.backends.openai._openai_verify import server_verifier, verifying

    verifier = server_verifier(variant)  # before the open's probes: a refused combination fails first
    try:
        with open_openai(variant, schema) as opened:
            yield verifying(opened, verifier)
    finally:
        if verifier is not None:
            verifier.close()


BACKEND = RegisteredBackend(name="openai", open=open_served, capabilities=CAPABILITIES, options=OpenAIOptions)

__all__ = ["BACKEND", "CAPABILITIES", "open_served"]
