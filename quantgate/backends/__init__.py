"""Model backends: how a variant becomes a LangChain chat model for one schema.

A backend is the extension point for serving stacks. It opens a variant (loading weights,
or connecting to a server), hands out a chat model constrained to the dataset's JSON schema,
reports what it knows about the runtime, and frees everything when the block ends:

    with open_variant(variant, schema) as opened:
        graph.invoke({"text": ...}, context=ExtractionContext(model=opened.chat_model, ...))

Each backend also declares what it can do (`BackendCapabilities`): token fidelity, running
in a worker process, how a load level is served, embeddings. Callers ask `capabilities(variant)`
before opening, never the backend's name. Each backend is one `RegisteredBackend` record
(name, opener, capabilities). Register another with `register_backend("name", opener,
capabilities=BackendCapabilities(...))` (`registered_backend` for a block), or install a package
that names its record in the `quantgate.backends` entry-point group. The built-ins (`llamacpp`,
`ollama`, `openai`, `langchain`) are such records, one folder each, named in quantgate's own
pyproject.toml: the registry knows no backend by name.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel

from quantgate.backends._backend_error import BackendError
from quantgate.backends._backend_options import BackendOptions, OptionsError, UncheckedOptions, options_of
from quantgate.backends._declared_capabilities import (
    EMBEDDED_SLOTS,
    LOOKUP_KWARG,
    TOP_LOGPROBS_KWARG,
    VERIFY_KWARG,
    BackendCapabilities,
)
from quantgate.inputs._variants import KVCache, Variant


@dataclass(kw_only=True)
class OpenedVariant:
    """A variant ready to extract with.

    Attributes:
        chat_model: The chat model, constrained to the schema where the backend can.
        runtime: Name and version of what serves it (recorded in `variants.json`).
        context_window: Tokens the model can attend to, when known.
        max_output_tokens: The generation limit per call.
        count_tokens: The model's tokenizer, when available (long-input handling uses it).
        quantization: The quantization the server reports, when the variant does not say.
        memory_pid: The process that holds the model when it is not this one (a local
            server); its RSS, children included, is what gets sampled.
        reported_memory_bytes: The model's size in memory as the server reports it.
        reported_vram_bytes: The part of it in GPU memory, as the server reports it.
        max_retries: Calls repeated after a retryable failure (a busy server, a timeout).
        retry_backoff_s: Wait before the first retry, doubled each time.
        native_tools: A tool-calling task's tools go through the model API's own `tools` (Ollama's
            `/api/chat`), not as JSON constrained by a grammar: the prompt then asks for a tool
            call and shows its examples as tool calls (`graphs.prompting.build_messages`).
        for_schema: The same model constrained to another record schema, for the cases that
            bring their own tools (`ExtractionContext.for_task`); None: `chat_model` serves any
            schema (the backend does not constrain answers to one).
        prompt_tools_tokens: Tokens the model's prompt adds for a record schema beyond its messages
            (an embedded chat template renders a tool-calling task's tools), which `context_window`
            has for the messages that much less; per schema, since each case's tools are its own.
            None: none.
    """

    chat_model: BaseChatModel
    runtime: dict[str, Any] = field(default_factory=dict)
    context_window: int | None = None
    max_output_tokens: int = 512
    count_tokens: Callable[[str], int] | None = None
    quantization: str | None = None
    memory_pid: int | None = None
    reported_memory_bytes: int | None = None
    reported_vram_bytes: int | None = None
    max_retries: int = 2
    retry_backoff_s: float = 0.5
    native_tools: bool = False
    for_schema: Callable[[Mapping[str, Any]], BaseChatModel] | None = None
    prompt_tools_tokens: Callable[[Mapping[str, Any]], int] | None = None


class Backend(Protocol):
    """Opens a variant for a schema; the returned context manager frees it on exit.

    `slots` is the number of sequences to decode at once; it is None unless the backend
    declares `parallel="slots"` and the caller asks for more than one at a time.
    """

    def __call__(
        self, variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
    ) -> AbstractContextManager[OpenedVariant]:
        """Open `variant` with output constrained to `schema`."""
        ...


@dataclass(frozen=True, kw_only=True)
class RegisteredBackend:
    """One backend: its name, how it opens a variant and what it can do.

    A separately installed package adds a backend by naming one of these in the
    `quantgate.backends` entry-point group, under the backend's name (see `docs/development.md`).

    Attributes:
        name: The variants' `backend` value.
        open: Opens a variant for a schema.
        capabilities: What the backend can do; by default nothing beyond extraction.
        options: The typed model of the variants' `options` it reads (a `BackendOptions`); a wrong
            value or an unknown key fails the variant before it is opened, naming the variant and the
            key. By default `UncheckedOptions`: the common keys typed, any other kept.
    """

    name: str
    open: Backend
    capabilities: BackendCapabilities = field(default_factory=BackendCapabilities)
    options: type[BackendOptions] = UncheckedOptions


ENTRY_POINT_GROUP = "quantgate.backends"
"""The entry-point group where installed packages name their `RegisteredBackend`s."""


_REGISTRY: dict[str, RegisteredBackend] = {}
"""The backends loaded so far: those a script registered, and those the entry points named once asked for."""


def register_backend(
    name: str,
    backend: Backend,
    *,
    capabilities: BackendCapabilities | None = None,
    options: type[BackendOptions] = UncheckedOptions,
) -> RegisteredBackend:
    """Make `backend` available to variants whose `backend` field is `name`, replacing any
    backend of that name; `unregister_backend` removes it, `registered_backend` does both.

    Args:
        name: The variants' `backend` value.
        backend: Opens a variant for a schema.
        capabilities: What the backend can do; by default nothing beyond extraction (no
            token fidelity, no worker process, one shared object under load).
        options: The typed model of the variants' options it reads.

    Returns:
        The record now registered.
    """
    record = RegisteredBackend(
        name=name, open=backend, capabilities=capabilities or BackendCapabilities(), options=options
    )
    _REGISTRY[name] = record
    return record


def unregister_backend(name: str) -> RegisteredBackend:
    """Remove the backend registered as `name` (an installed package's comes back when next asked for).

    Raises:
        BackendError: No backend is registered as `name`.
    """
    record = _REGISTRY.pop(name, None)
    if record is None:
        raise BackendError(f"no backend registered as {name!r}")
    return record


@contextmanager
def registered_backend(
    name: str,
    backend: Backend,
    *,
    capabilities: BackendCapabilities | None = None,
    options: type[BackendOptions] = UncheckedOptions,
) -> Iterator[RegisteredBackend]:
    """Register a backend for the block, then restore the one it replaced, if any (tests use this)."""
    previous = _REGISTRY.get(name)
    try:
        yield register_backend(name, backend, capabilities=capabilities, options=options)
    finally:
        if previous is None:
            _REGISTRY.pop(name, None)
        else:
            _REGISTRY[name] = previous


def _installed(name: str) -> RegisteredBackend | None:
    """The backend an installed package names `name` in the entry-point group, registered."""
    for entry_point in entry_points(group=ENTRY_POINT_GROUP, name=name):
        where = f"entry point {name!r} of {entry_point.value!r} (group {ENTRY_POINT_GROUP})"
        try:
            record = entry_point.load()
        except Exception as exc:  # a plugin's import can fail in any way: name it and the plugin
            raise BackendError(f"{where} could not be loaded: {type(exc).__name__}: {exc}") from exc
        if not isinstance(record, RegisteredBackend) or record.name != name:
            raise BackendError(f"{where} is {record!r}, not a RegisteredBackend named {name!r}")
        _REGISTRY[name] = record
        return record
    return None


def _unregistered_note() -> str:
    """A hint when quantgate's own entry points are missing: a checkout whose pyproject.toml gained
    backends since it was installed (its built-ins are then unknown until it is installed again)."""
    own = [
        ep
        for ep in entry_points(group=ENTRY_POINT_GROUP)
        if ep.dist is not None and ep.dist.name == "quantgate"
    ]
    if own:
        return ""
    return (
        f" (quantgate's installed metadata names none of its own backends in the {ENTRY_POINT_GROUP} "
        "entry-point group: install it again, e.g. `pip install -e .` in its checkout)"
    )


def _lookup(name: str) -> RegisteredBackend | None:
    return _REGISTRY.get(name) or _installed(name)


def backend_names() -> list[str]:
    """The names of the registered backends and of those installed packages declare, sorted."""
    installed = {entry_point.name for entry_point in entry_points(group=ENTRY_POINT_GROUP)}
    return sorted(set(_REGISTRY) | installed)


def backend_module(name: str) -> str | None:
    """The module that defines the opener of backend `name`, by the name another process imports
    it by to know the backend too (a spawned worker, a Ray task on another node); None for an
    unknown backend or one a script registered (its `__main__` is not importable)."""
    record = _lookup(name)
    module = None if record is None else getattr(record.open, "__module__", None)
    if module != "__main__":
        return module
    spec = getattr(sys.modules["__main__"], "__spec__", None)  # `python -m package.module`
    return None if spec is None else str(spec.name)


def backend_capabilities(name: str) -> BackendCapabilities:
    """What the backend registered as `name` can do; nothing for an unknown name."""
    record = _lookup(name)
    return BackendCapabilities() if record is None else record.capabilities


def capabilities(variant: Variant) -> BackendCapabilities:
    """What a variant's backend can do, asked before opening it.

    A variant carrying a chat model object (the `langchain` backend) has no token fidelity
    and stays in this process, whatever its backend; one carrying an embeddings object can
    embed; one whose options decide verification (`BackendOptions.verification`: an `openai:`
    variant's `verify`) verifies as they say. An unknown backend declares nothing; opening it
    raises `BackendError`.
    """
    declared = backend_capabilities(variant.backend)
    try:  # options that decide verification (an openai variant's `verify`); refused ones decide nothing
        verifies = backend_options(variant).verification()
    except OptionsError:
        verifies = None
    if verifies is not None:
        declared = replace(declared, verification=verifies)
    if variant.embeddings is not None:
        declared = replace(declared, embeddings=True, process_isolation=False)
    if variant.chat_model is not None:
        return replace(declared, token_fidelity=None, process_isolation=False)
    return declared


def backend_options(variant: Variant) -> BackendOptions:
    """The variant's options read through its backend's typed model (`RegisteredBackend.options`;
    `UncheckedOptions` for an unknown backend).

    Raises:
        OptionsError: A value or a key the model refuses, the variant and the key named.
    """
    record = _lookup(variant.backend)
    return options_of(variant, UncheckedOptions if record is None else record.options)


def options_problems(variants: Iterable[Variant]) -> list[str]:
    """Why each variant's options are refused by its backend's model (a wrong value, an unknown key),
    asked when the variants are checked, before any model loads; a variant of an unknown backend is
    left to `open_variant`, which names the backends there are."""
    problems = []
    for variant in variants:
        if _lookup(variant.backend) is None:
            continue
        try:
            backend_options(variant)
        except OptionsError as exc:
            problems.append(str(exc))
    return problems


def model_file_problems(variants: Iterable[Variant]) -> list[str]:
    """Why each variant's local model file cannot serve its options (`BackendOptions.model_file_problem`:
    an embedded variant with `chat_template` and a GGUF without one), asked once the files are
    checked, before any model loads."""
    problems = []
    for variant in variants:
        problem = backend_options(variant).model_file_problem(Path(variant.model))
        if problem is not None:
            problems.append(f"variant {variant.name!r}: {problem}")
    return problems


def kv_cache_problem(variant: Variant) -> str | None:
    """Why the variant's backend cannot take its `kv_cache` (see `BackendCapabilities.kv_cache`),
    or None when it can (or the variant sets none)."""
    cache = variant.kv_cache
    takes = capabilities(variant).kv_cache
    if cache is None:
        return None
    if takes is None:
        return f"variant {variant.name!r}: kv_cache {cache.label()}: backend {variant.backend!r} takes none"
    if takes == "declared" and cache.k != cache.v:
        return (
            f"variant {variant.name!r}: kv_cache {cache.label()}: the {variant.backend} server sets one type "
            'for K and V (Ollama: OLLAMA_KV_CACHE_TYPE); declare one, e.g. kv_cache = "q8_0"'
        )
    if takes == "applied" and cache.v != "f16":
        try:
            refused = backend_options(variant).quantized_v_cache_refused()
        except OptionsError:
            return None  # a bad option is reported by `options_problems`, naming it
        if refused is not None:
            return f"variant {variant.name!r}: kv_cache {cache.label()}: {refused}"
    return None


def kv_cache_note(backend: str, cache: KVCache | None) -> str:
    """The cache type as the decision's record shows it: what an applying backend used (`f16
    (default)` when unset), what a declaring one declares (`q8_0 (declared)`), else `not declared`."""
    takes = backend_capabilities(backend).kv_cache
    if takes == "applied":
        return cache.label() if cache else "f16 (default)"
    if cache is not None:
        return f"{cache.label()} (declared)"
    return "not declared"


def structured_output_note(backend: str, runtime: Mapping[str, Any] | None) -> str:
    """How a variant's answers were held to the schema, as the decision's record says it: what its
    calls did (`runtime.decoding`), else `validation and repairs only` for a backend that cannot
    constrain answers (`BackendCapabilities.json_schema`), else not recorded."""
    decoding = (runtime or {}).get("decoding")
    if decoding:
        return str(decoding)
    return "not recorded" if backend_capabilities(backend).json_schema else "validation and repairs only"


def open_variant(
    variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
) -> AbstractContextManager[OpenedVariant]:
    """Open a variant with its backend.

    Args:
        variant: The variant.
        schema: The JSON schema outputs are constrained to.
        slots: Sequences decoded at once, for a backend with `parallel="slots"` (the others are
            given None); None: one at a time.

    Raises:
        BackendError: The backend is unknown, or an installed package's could not be loaded.
        OptionsError: An option its backend's model refuses (a `BackendError` too).
    """
    record = _lookup(variant.backend)
    if record is None:
        known = (", ".join(backend_names()) or "none") + _unregistered_note()
        raise BackendError(f"variant {variant.name}: unknown backend {variant.backend!r}; known: {known}")
    problem = kv_cache_problem(variant)
    if problem:
        raise BackendError(problem)
    options_of(variant, record.options)  # a wrong option is named before anything is opened
    takes_slots = capabilities(variant).parallel == "slots"
    return record.open(variant, schema, slots=slots if takes_slots else None)


__all__ = [
    "EMBEDDED_SLOTS",
    "ENTRY_POINT_GROUP",
    "LOOKUP_KWARG",
    "TOP_LOGPROBS_KWARG",
    "VERIFY_KWARG",
    "Backend",
    "BackendCapabilities",
    "BackendError",
    "BackendOptions",
    "OpenedVariant",
    "OptionsError",
    "RegisteredBackend",
    "backend_capabilities",
    "backend_module",
    "backend_names",
    "backend_options",
    "capabilities",
    "kv_cache_note",
    "kv_cache_problem",
    "model_file_problems",
    "open_variant",
    "options_of",
    "options_problems",
    "register_backend",
    "registered_backend",
    "structured_output_note",
    "unregister_backend",
]
