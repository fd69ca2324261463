"""Token-level fidelity of quantized variants to the reference, measured by teacher forcing.

For each case the reference and every variant read the same tokens: the case's
first-attempt prompt (built as the extraction graph builds it, `case_prompt`) followed by
the reference's output. At each output position the variant's next-token distribution is
compared with the reference's (`evaluators.fidelity`): KLD and top-1 agreement, pooled over
all positions of all cases. Unlike output-level agreement this sees how close a variant is
even where greedy decoding happens to pick the same token.

Embedded variants (`measure_token_fidelity`): all models are loaded in this process with
`EmbeddedEngine` (at once: about 2.5 GB for the Gemma 3 270M ladder) and compared on their
full logits; the caller decides whether that happens in a worker process.

Ollama variants (`measure_ollama_token_fidelity`): the server gives only top-k
log-probabilities of generated tokens, so each model follows the reference's output by
resumed greedy generation (`quantgate.backends.ollama._ollama_forcing`) and the KLD is the top-k
lower bound (`evaluators.fidelity.top_k_kld`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from tqdm import tqdm

from evaluators.fidelity import (
    TokenFidelity,
    TokenFidelitySummary,
    summarize_token_fidelity,
    token_fidelity,
    top_logprob_fidelity,
)
from evaluators.json_tokens import token_kinds
from graphs.extraction import ExtractionContext
from graphs.long_inputs import prompt_messages
from quantgate.backends import BackendError
from quantgate.backends._base_prompt import render_prompt
from quantgate.backends._forcing import ForcedPositions, Forcing
from quantgate.backends.llamacpp._engine import EmbeddedEngine
from quantgate.backends.llamacpp._llamacpp import LlamaCppChatModel
from quantgate.backends.llamacpp._teacher_forcing import DEFAULT_ROWS_PER_BATCH, forced_logits
from quantgate.inputs._variants import KVCache

FidelityRecord = dict[str, Any]
"""One JSON-ready line per (variant, case): `variant`, `case_id`, `positions`, `kld`, `top1`,
`delta_p`, `kinds` (`quantgate.rundir._lines.FidelityLine`), and `error` (a message) when the
case could not be measured (then the others are None).
Ollama records add `requests` (the variant's chat requests) and `unobserved` (positions where
a model ended its answer, which have no log-probabilities and are left out)."""


def case_prompt(
    context: ExtractionContext, text: str, render: Callable[[Sequence[BaseMessage]], str] | None = None
) -> str:
    """The prompt of a case's first attempt, exactly as the embedded backend sees it.

    Args:
        context: The extraction context of the case (`case_context`: its schema, examples, context
            window, tokenizer and model).
        text: The case text (cut to the input budget as the graph cuts it).
        render: The prompt text of messages; None: the context's model's own when it is an embedded
            model (`LlamaCppChatModel.prompt_text`: its chat template, with the case's tools, with the
            `chat_template` option), else the base-model text.
    """
    messages, _ = prompt_messages(context, text)
    if render is None:
        model = context.model
        render = model.prompt_text if isinstance(model, LlamaCppChatModel) else render_prompt
    return render(messages)


def _load(
    stack: ExitStack, path: Path, options: Mapping[str, Any], kv_cache: KVCache | None = None
) -> EmbeddedEngine:
    engine = EmbeddedEngine(path, kv_cache=kv_cache, **options)
    stack.callback(engine.close)
    return engine


def _load_variants(
    stack: ExitStack,
    reference: EmbeddedEngine,
    paths: Mapping[str, Path],
    options: Mapping[str, Any],
    kv_caches: Mapping[str, KVCache | None],
) -> dict[str, EmbeddedEngine]:
    """Load every variant, each with its own KV-cache type (freed when `stack` closes); each must
    share the reference's vocabulary."""
    variants = {name: _load(stack, path, options, kv_caches.get(name)) for name, path in paths.items()}
    for name, engine in variants.items():
        if engine.llama.n_vocab() != reference.llama.n_vocab():
            raise ValueError(f"variant {name}: its vocabulary differs from the reference's")
    return variants


def _measured(fidelity: TokenFidelity) -> FidelityRecord:
    """The per-position figures of a record."""
    return {
        "positions": fidelity.positions,
        "kld": list(fidelity.kld),
        "top1": list(fidelity.top1),
        "delta_p": None if fidelity.delta_p is None else list(fidelity.delta_p),
        "kinds": None if fidelity.kinds is None else list(fidelity.kinds),
    }


def _case_records(
    *,
    case_id: str,
    prompt_tokens: list[int],
    target_tokens: list[int],
    tags: Sequence[str],
    reference: EmbeddedEngine,
    variants: Mapping[str, EmbeddedEngine],
    rows_per_batch: int,
) -> Iterator[tuple[FidelityRecord, TokenFidelity | None]]:
    try:
        reference_logits = forced_logits(
            reference.llama, prompt_tokens, target_tokens, rows_per_batch=rows_per_batch
        )
    except ValueError as exc:  # prompt + output do not fit in the context
        for name in variants:
            unmeasured = {"positions": None, "kld": None, "top1": None, "error": str(exc)}
            yield {"variant": name, "case_id": case_id, **unmeasured}, None
        return
    kinds = token_kinds([reference.llama.detokenize([token]) for token in target_tokens])
    for name, engine in variants.items():
        variant_logits = forced_logits(
            engine.llama, prompt_tokens, target_tokens, rows_per_batch=rows_per_batch
        )
        fidelity = token_fidelity(reference_logits=reference_logits, variant_logits=variant_logits)
        del variant_logits  # up to n_vocab floats per position: free before the next variant's
        fidelity = replace(fidelity, kinds=kinds, tags=tuple(tags))
        yield {"variant": name, "case_id": case_id, **_measured(fidelity)}, fidelity


def _collect(
    records: Iterator[tuple[FidelityRecord, TokenFidelity | None]],
    measured: dict[str, list[TokenFidelity]],
    on_case: Callable[[FidelityRecord], None] | None,
) -> None:
    for record, fidelity in records:
        if fidelity is not None:
            measured[record["variant"]].append(fidelity)
        if on_case is not None:
            on_case(record)


def _check_inputs(prompts: Mapping[str, str], outputs: Mapping[str, str], rows_per_batch: int) -> None:
    missing = [case_id for case_id in outputs if case_id not in prompts]
    if missing:
        raise ValueError(f"no prompt for cases with a reference output: {', '.join(missing[:5])}")
    if rows_per_batch < 1:
        raise ValueError(f"rows_per_batch must be at least 1, got {rows_per_batch}")


def measure_token_fidelity(
    *,
    reference: EmbeddedEngine,
    variant_paths: Mapping[str, Path],
    prompts: Mapping[str, str],
    reference_outputs: Mapping[str, str],
    engine_options: Mapping[str, Any] | None = None,
    on_case: Callable[[FidelityRecord], None] | None = None,
    progress: bool = False,
    rows_per_batch: int = DEFAULT_ROWS_PER_BATCH,
    tags: Mapping[str, Sequence[str]] | None = None,
    kv_caches: Mapping[str, KVCache | None] | None = None,
) -> dict[str, TokenFidelitySummary]:
    """Teacher-force every variant on the reference's outputs and compare next-token predictions.

    Prompts are tokenized as the reference reads them (`EmbeddedEngine.prompt`), outputs without
    BOS, by the reference's tokenizer, so every model reads the same tokens. An output should be the
    reference's answer to exactly that prompt (its first attempt, without repairs); being
    re-tokenized, it may differ from the generated tokens where the reference produced a
    non-canonical split (seen once in 685 tokens). A case whose prompt and output do not fit
    in the context is skipped, with an `error` in its records. Each position's answer token
    is classed as structural or value (`evaluators.json_tokens`) by its bytes in the
    reference's tokenizer. The reference's file listed as a variant should give a KLD of ~0.

    Args:
        reference: The reference, already loaded (the caller built the prompts with it, frees it).
        variant_paths: Variant name to GGUF file; loaded here and freed on return.
        prompts: Case id to the first-attempt prompt (`case_prompt`).
        reference_outputs: Case id to the reference's output text for that prompt; the
            cases measured, in this order.
        engine_options: Keyword arguments of `EmbeddedEngine` (`n_ctx`, `n_threads`, ...).
        on_case: Called with each (variant, case) record as soon as it is measured.
        progress: Show a progress bar over cases.
        rows_per_batch: See `forced_logits`.
        tags: Case id to its tags, for the per-slice figures (a case not in it has none).
        kv_caches: Variant name to its KV-cache type (f16 for a variant not in it).

    Returns:
        Variant name to its summary pooled over all positions of all measured cases, and per slice.

    Raises:
        ValueError: A case has an output but no prompt, a variant's vocabulary differs from
            the reference's, or `rows_per_batch` is below 1.
    """
    _check_inputs(prompts, reference_outputs, rows_per_batch)
    measured: dict[str, list[TokenFidelity]] = {name: [] for name in variant_paths}
    with ExitStack() as stack:
        variants = _load_variants(stack, reference, variant_paths, engine_options or {}, kv_caches or {})
        for case_id, output in tqdm(reference_outputs.items(), desc="token fidelity", disable=not progress):
            records = _case_records(
                case_id=case_id,
                prompt_tokens=reference.prompt.tokens(reference.llama, prompts[case_id]),
                target_tokens=reference.llama.tokenize(output.encode("utf-8"), add_bos=False),
                tags=(tags or {}).get(case_id, ()),
                reference=reference,
                variants=variants,
                rows_per_batch=rows_per_batch,
            )
            _collect(records, measured, on_case)
    return {name: summarize_token_fidelity(cases=cases) for name, cases in measured.items()}


def _compare_walks(reference: ForcedPositions, variant: ForcedPositions) -> tuple[TokenFidelity, int]:
    """Fidelity over the positions both walks observed, and how many positions were left out.

    Each position's kind comes from the reference's tokens (the whole output is scanned, so a
    left-out position does not shift the others' kinds).
    """
    kinds = token_kinds([token.encode("utf-8") for token in reference.tokens])
    observed = [
        (r, v, kind)
        for r, v, kind in zip(reference.top, variant.top, kinds, strict=False)
        if r is not None and v is not None
    ]
    unobserved = len(reference.tokens) - len(observed)
    fidelity = top_logprob_fidelity(
        reference=[r for r, _, _ in observed], variant=[v for _, v, _ in observed]
    )
    return replace(fidelity, kinds=tuple(kind for _, _, kind in observed)), unobserved


def _variant_record(
    name: str,
    case_id: str,
    reference: ForcedPositions,
    followed: ForcedPositions | BackendError,
    tags: Sequence[str],
) -> tuple[FidelityRecord, TokenFidelity | None]:
    record: FidelityRecord = {"variant": name, "case_id": case_id}
    if isinstance(followed, BackendError):
        return record | {"positions": None, "kld": None, "top1": None, "error": str(followed)}, None
    fidelity, unobserved = _compare_walks(reference, followed)
    fidelity = replace(fidelity, tags=tuple(tags))
    return record | _measured(fidelity) | {
        "requests": followed.requests,
        "unobserved": unobserved,
        "error": None,
    }, fidelity


def measure_ollama_token_fidelity(
    *,
    reference: Forcing,
    variants: Mapping[str, Forcing],
    messages: Mapping[str, Sequence[BaseMessage]],
    reference_outputs: Mapping[str, str],
    on_case: Callable[[FidelityRecord], None] | None = None,
    progress: bool = False,
    tags: Mapping[str, Sequence[str]] | None = None,
    kv_caches: Mapping[str, KVCache | None] | None = None,
) -> dict[str, TokenFidelitySummary]:
    """Follow the reference's outputs with every variant of a server (Ollama, OpenAI-compatible)
    and compare top-k lists.

    The reference walks all cases first, then each variant (a server that keeps one model
    loaded switches models once per variant, not per case). A case the server fails on
    gets a record with its `error` and adds no positions.

    Args:
        reference: The reference model on its server.
        variants: Variant name to its model on its server.
        messages: Case id to the first-attempt messages (`prompt_messages`).
        reference_outputs: Case id to the reference's output for those messages.
        on_case: Called with each (variant, case) record as soon as it is measured.
        progress: Show progress bars.
        tags: Case id to its tags, for the per-slice figures.

    Returns:
        Variant name to its summary, pooled over the positions both walks observed, and per slice.
    """
    walks = {
        case_id: _walk(partial(reference.follow_text, messages[case_id], output))
        for case_id, output in tqdm(
            reference_outputs.items(), desc="token fidelity: reference", disable=not progress
        )
    }
    measured: dict[str, list[TokenFidelity]] = {name: [] for name in variants}
    for name, forcing in variants.items():
        for case_id, walk in tqdm(walks.items(), desc=f"token fidelity: {name}", disable=not progress):
            if isinstance(walk, BackendError):
                record: FidelityRecord = {"variant": name, "case_id": case_id, "positions": None, "kld": None,
                                      "top1": None, "error": f"reference: {walk}"}  # fmt: skip
            else:
                followed = _walk(partial(forcing.follow_tokens, messages[case_id], walk.tokens))
                case_tags = (tags or {}).get(case_id, ())
                record, fidelity = _variant_record(name, case_id, walk, followed, case_tags)
                if fidelity is not None:
                    measured[name].append(fidelity)
            if on_case is not None:
                on_case(record)
    return {name: summarize_token_fidelity(cases=cases) for name, cases in measured.items()}


def _walk(follow: Callable[[], ForcedPositions]) -> ForcedPositions | BackendError:
    try:
        return follow()
    except BackendError as exc:
        return exc
