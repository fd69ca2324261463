"""What each backend declares it can do (`BackendCapabilities`); each built-in backend declares its own
in its folder (`quantgate.backends.llamacpp`, ...). Callers ask `quantgate.backends.capabilities(variant)`,
never a backend's name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from quantgate.backends._forcing import LogprobsForcing


@dataclass(frozen=True, kw_only=True)
class BackendCapabilities:
    """What a backend can do, declared when it is registered; the defaults declare nothing.

    Attributes:
        token_fidelity: How token fidelity is measured against a reference of the same
            backend: `"logits"` teacher-forces full next-token distributions (embedded
            llama.cpp, in a worker process), `"logprobs"` compares the top-k log-probabilities
            a server API returns (Ollama, an OpenAI-compatible server; how is
            `logprobs_forcing`); None when it cannot be measured.
        logprobs_forcing: For `"logprobs"` token fidelity, how a variant's model is made to
            follow the reference's output (`quantgate.backends._forcing.LogprobsForcing`): the
            built-ins' are `quantgate.backends.ollama._ollama_forcing.LOGPROBS_FORCING` (Ollama's
            chat API, the server from the variant's `host` option) and
            `quantgate.backends.openai._openai_forcing.LOGPROBS_FORCING` (an OpenAI-compatible
            server from its `base_url`, `api_key_env` and `api` options). A backend of its own
            declares one of them, or its own; None: no forcing (token fidelity is then not
            measured, and the run says why).
        process_isolation: The variant is opened in a spawned worker process for its
            evaluation (clean memory figures, a crash fails the variant, not the run). The
            variant must pickle and the backend must be registered in the worker too (at import
            of its module); a chat model object given from Python cannot cross processes.
        parallel: How k concurrent requests (a run's `--concurrency`, a load level) are
            served: `"slots"` opens one model copy decoding k sequences at once in one context
            (the backend takes a `slots=k` keyword; embedded llama.cpp), `"instances"` opens k
            copies of the model in process (within a memory bound), `"server"` sends them to
            one server that schedules its own slots (Ollama's `OLLAMA_NUM_PARALLEL`), `"none"`
            shares the one opened object.
        default_concurrency: Cases in flight per variant when the run does not say: for the
            embedded backend the slot count `benchmarks/throughput.py` found best.
        memory: Where the model's memory lives: `"process"` (the process that opened it; the
            load test then runs it in a worker of its own, when `process_isolation` allows) or
            `"server"` (the server's process tree when local, else not measured).
        embeddings: The backend can produce embeddings (`quantgate.backends._embedders`).
        model_file: The variant's `model` is a local file the backend loads (a GGUF): production
            checks that it is there and is the file the run evaluated (sha256), and Ollama can be
            given it in a Modelfile.
        from_python: The variant is a chat model object given from Python: a spec alone cannot
            rebuild it, so production must be given the same object again.
        kv_cache: What the backend does with a variant's `kv_cache`: `"applied"` (given to the
            engine, K and V each; a quantized V cache needs flash attention: llama.cpp),
            `"declared"` (set server-wide, one type for K and V, recorded as declared: Ollama's
            `OLLAMA_KV_CACHE_TYPE`), None (the backend takes none).
        json_schema: The backend constrains answers to the dataset's JSON schema (a grammar, a
            server's `format` or `response_format`); without it an answer is only validated and
            repaired. What a variant's calls did is its `runtime.decoding`.
        verification: Its chat model takes an `answer` keyword (`VERIFY_KWARG`): another model's
            answer to the same prompt, read at prefill speed and kept as far as this model would
            have chosen each token (under the same grammar and greedy decoding), decoded from the
            first position where it would not; the answer's metadata says how it was obtained
            (`obtained`, `answer_tokens`, `verified_tokens`). A run hands candidates the reference's
            answers when their backend declares it (`quantgate.evaluate.scheduler._verification`).
            A variant's options may turn it on (`BackendOptions.verification`: the OpenAI-compatible
            backend's `verify`, through the server's log-probabilities of given text).
        no_verification: Why the backend's variants decode every case when they do not verify, for
            the run's `verification_missing` (what the backend's API lacks, or the option that turns
            it on); None: the backend declares no verification, which the run says.
    """

    token_fidelity: Literal["logits", "logprobs"] | None = None
    logprobs_forcing: LogprobsForcing | None = None
    process_isolation: bool = False
    parallel: Literal["slots", "instances", "server", "none"] = "none"
    default_concurrency: int = 1
    memory: Literal["process", "server"] = "process"
    embeddings: bool = False
    model_file: bool = False
    from_python: bool = False
    kv_cache: Literal["applied", "declared"] | None = None
    json_schema: bool = False
    verification: bool = False
    no_verification: str | None = None


VERIFY_KWARG = "answer"
"""The keyword a backend with `verification` takes, in its chat model's calls, for the answer to verify:
its text, or a mapping with `text` and the `top_logprobs` its model kept (`logprobs.TokenTop` per
token), against which each position read is compared (the answer's metadata `fidelity`)."""

TOP_LOGPROBS_KWARG = "top_logprobs"
"""The keyword (true) with which a backend with `verification` keeps its top log-probabilities per
decoded token, in the answer's metadata `top_logprobs` (the reference's, for the candidates)."""

LOOKUP_KWARG = "lookup"
"""The keyword (true) with which a backend with `verification` drafts from text already seen (the
prompt, what it wrote) and keeps each drafted token only where greedy decoding chooses it too
(`quantgate.backends.llamacpp._lookup`): the reference's answers that candidates will verify, which
no latency figure reads. A candidate verifying an answer drafts from it too. A backend that cannot
draft (a server) drops the keyword and decodes as it does."""


EMBEDDED_SLOTS = 4
"""Default slots of an embedded variant. `benchmarks/throughput.py` on 2 cores (Gemma 3 270M
Q4_K_M, depth 1,800): raw decode gives 44 tokens/s at 1 sequence, 68 at 2, 101 at 4 and 87
at 8, so 4 is where the aggregate peaks."""
