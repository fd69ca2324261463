"""The token-fidelity step of `quantgate run`, after every variant has been evaluated.

Which variants can be measured, how, and what goes into the summary. Embedded llama.cpp
variants of an embedded reference are teacher-forced on full logits in a worker process.
Ollama variants of an Ollama reference are measured from the top-k log-probabilities the
server returns (a lower bound of the KLD), over HTTP from this process. Any other pairing
(a LangChain chat model, an embedded reference with Ollama variants) is reported as not
measured, with the reason. Per (variant, case) records stream to `fidelity.jsonl`, so every
pooled figure in summary.json can be recomputed from them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphs.extraction import prompt_messages
from quantgate.backends import BackendError
from quantgate.backends.ollama_forcing import DEFAULT_TOP_LOGPROBS, OllamaForcing
from quantgate.dataset import Case, Dataset
from quantgate.runstore import latest_records, read_records
from quantgate.variants import Variant
from quantgate.worker import WorkerDiedError, WorkerFailedError, run_in_worker

FIDELITY_FILE = "fidelity.jsonl"
METHOD = (
    "teacher forcing with llama.cpp: each variant reads the case's first-attempt prompt and the "
    "reference's output; per output position KL(reference || variant) of the full next-token "
    "distributions (nats) and top-1 agreement, pooled over positions"
)
OLLAMA_METHOD = (
    "resumed greedy generation over Ollama's chat API with logprobs: each model follows the "
    "reference's output from the case's first-attempt messages (prefilling the output so far after "
    "each disagreement); per output position a lower bound of KL(reference || variant) from the two "
    "top-{k} lists (tokens outside both merged into one bucket, nats) and top-1 agreement, pooled "
    "over positions"
)


def unmeasured_reason(variant: Variant, reference: Variant, *, enabled: bool) -> str | None:
    """Why a variant's token fidelity cannot be measured; None when it can."""
    if not enabled:
        return "not measured: token fidelity was switched off (--no-token-fidelity)"
    if variant.chat_model is not None or variant.backend not in ("llamacpp", "ollama"):
        return f"not measured: the {variant.backend} backend exposes no logits"
    if reference.chat_model is not None or reference.backend != variant.backend:
        return (
            f"not measured: the reference ({reference.backend}) and this variant ({variant.backend}) "
            "must be served by the same backend to read the same prompt"
        )
    return None


def reference_outputs(records: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The reference's raw output per case, for cases answered validly on the first attempt.

    A repaired answer belongs to the repair prompt, not to the case's first prompt, so it is
    left out rather than paired with the wrong prompt.
    """
    return {
        case_id: record["raw"]
        for case_id, record in records.items()
        if record.get("raw") and record.get("attempts") == 1 and not record.get("error")
    }


@dataclass(frozen=True, kw_only=True)
class FidelityJob:
    """What the worker needs; picklable."""

    reference: Variant
    variants: tuple[Variant, ...]
    dataset: Dataset
    cases: tuple[Case, ...]
    outputs: dict[str, str]
    run_dir: Path
    max_repairs: int
    progress: bool


def _measure(job: FidelityJob) -> dict[str, dict[str, Any]]:
    """Teacher-force every variant on the reference's outputs; the reference is loaded once.

    The reference is opened as the run opened it, so each case's first-attempt prompt is
    built by the same code with the same context window and tokenizer.
    """
    from quantgate.backends import open_variant
    from quantgate.backends.llamacpp import LlamaCppChatModel
    from quantgate.run import RunOptions, extraction_context
    from quantgate.token_fidelity import case_prompt, measure_token_fidelity

    options = RunOptions(max_repairs=job.max_repairs, progress=False)
    texts = {c.id: c.text for c in job.cases if c.id in job.outputs}
    engine_options = {k: v for k, v in job.reference.options.items() if k != "max_tokens"}
    with (
        open_variant(job.reference, job.dataset.schema) as opened,
        (job.run_dir / FIDELITY_FILE).open("a", encoding="utf-8") as sink,
    ):
        if not isinstance(opened.chat_model, LlamaCppChatModel):
            raise BackendError(f"reference {job.reference.name}: not an embedded llama.cpp model")
        context = extraction_context(job.dataset, opened, options)
        prompts = {case_id: case_prompt(context, text) for case_id, text in texts.items()}

        def write(record: dict[str, Any]) -> None:
            sink.write(json.dumps(record) + "\n")
            sink.flush()

        summaries = measure_token_fidelity(
            reference=opened.chat_model.engine,
            variant_paths={v.name: Path(v.model) for v in job.variants},
            prompts=prompts,
            reference_outputs=job.outputs,
            engine_options=engine_options,
            on_case=write,
            progress=job.progress,
        )
    return {name: summary.as_dict() for name, summary in summaries.items()}


def _forcing(variant: Variant) -> OllamaForcing:
    from quantgate.backends.ollama import DEFAULT_NUM_CTX, DEFAULT_TIMEOUT_S, ollama_host

    options = variant.options
    return OllamaForcing(
        host=ollama_host(variant),
        model=variant.model,
        options={
            "num_ctx": int(options.get("num_ctx", DEFAULT_NUM_CTX)),
            "seed": int(options.get("seed", 0)),
        },
        top_logprobs=int(options.get("top_logprobs", DEFAULT_TOP_LOGPROBS)),
        timeout_s=float(options.get("timeout_s", DEFAULT_TIMEOUT_S)),
    )


def measure_ollama(job: FidelityJob) -> dict[str, dict[str, Any]]:
    """Measure Ollama variants against an Ollama reference, from this process (HTTP only).

    The reference is opened as the run opened it, so each case's first-attempt messages are
    built by the same code with the same context window.

    Raises:
        BackendError: The reference's server cannot be reached or does not have the model.
    """
    from quantgate.backends import open_variant
    from quantgate.run import RunOptions, extraction_context
    from quantgate.token_fidelity import measure_ollama_token_fidelity

    options = RunOptions(max_repairs=job.max_repairs, progress=False)
    with (
        open_variant(job.reference, job.dataset.schema) as opened,
        (job.run_dir / FIDELITY_FILE).open("a", encoding="utf-8") as sink,
    ):
        context = extraction_context(job.dataset, opened, options)
        messages = {c.id: prompt_messages(context, c.text)[0] for c in job.cases if c.id in job.outputs}

        def write(record: dict[str, Any]) -> None:
            sink.write(json.dumps(record) + "\n")
            sink.flush()

        summaries = measure_ollama_token_fidelity(
            reference=_forcing(job.reference),
            variants={v.name: _forcing(v) for v in job.variants},
            messages=messages,
            reference_outputs=job.outputs,
            on_case=write,
            progress=job.progress,
        )
    method = {
        v.name: OLLAMA_METHOD.replace("{k}", str(v.options.get("top_logprobs", DEFAULT_TOP_LOGPROBS)))
        for v in job.variants
    }
    return {name: {**summary.as_dict(), "method": method[name]} for name, summary in summaries.items()}


def measure_in_worker(job: FidelityJob) -> dict[str, dict[str, Any]]:
    """Run the measurement in a fresh process (all models loaded at once, then freed).

    Raises:
        RuntimeError: The worker failed or died; the message says why.
    """
    try:
        return run_in_worker(_measure, job, name="quantgate-token-fidelity")
    except (WorkerDiedError, WorkerFailedError, BackendError) as exc:
        raise RuntimeError(f"the token-fidelity worker failed: {exc}") from None


def annotate(
    entries: Sequence[dict[str, Any]], measured: Mapping[str, dict[str, Any]], reasons: Mapping[str, str]
) -> None:
    """Put each variant's token fidelity (or why it is missing) into its summary entry."""
    for entry in entries:
        if entry["status"] != "ok" or entry.get("is_reference"):
            continue
        name = entry["name"]
        if measured.get(name, {}).get("positions"):
            entry["token_fidelity"] = {"method": METHOD, **measured[name], "records": FIDELITY_FILE}
            entry["token_fidelity_missing"] = None
        elif name in measured:
            entry["token_fidelity"] = None
            entry["token_fidelity_missing"] = (
                f"not measured: no position could be compared (see {FIDELITY_FILE})"
            )
        else:
            entry["token_fidelity"] = None
            entry["token_fidelity_missing"] = reasons.get(name, "not measured")


def token_fidelity_step(
    *,
    dataset: Dataset,
    cases: Sequence[Case],
    variants: Sequence[Variant],
    reference_name: str,
    entries: list[dict[str, Any]],
    run_dir: Path,
    enabled: bool,
    max_repairs: int,
    progress: bool,
) -> None:
    """Measure token fidelity where it can be, and say why where it cannot.

    Fills `token_fidelity` / `token_fidelity_missing` in the summary `entries` in place.
    """
    ok = {e["name"] for e in entries if e["status"] == "ok"}
    reference = next(v for v in variants if v.name == reference_name)
    if reference_name not in ok:
        return
    reasons: dict[str, str] = {}
    targets = []
    for variant in variants:
        if variant.name == reference_name or variant.name not in ok:
            continue
        reason = unmeasured_reason(variant, reference, enabled=enabled)
        if reason:
            reasons[variant.name] = reason
        else:
            targets.append(variant)
    outputs = reference_outputs(latest_records(read_records(run_dir)).get(reference_name, {}))
    if targets and not outputs:
        missing = "not measured: no case answered validly by the reference at first try"
        reasons |= {v.name: missing for v in targets}
        targets = []
    measured: dict[str, dict[str, Any]] = {}
    for backend, measure in (("llamacpp", measure_in_worker), ("ollama", measure_ollama)):
        chosen = tuple(v for v in targets if v.backend == backend)
        if not chosen:
            continue
        job = FidelityJob(
            reference=reference,
            variants=chosen,
            dataset=dataset,
            cases=tuple(cases),
            outputs=outputs,
            run_dir=run_dir,
            max_repairs=max_repairs,
            progress=progress,
        )
        try:
            measured |= measure(job)
        except (RuntimeError, BackendError) as exc:
            print(f"quantgate: token fidelity not measured: {exc}")
            reasons |= {v.name: f"not measured: {str(exc).splitlines()[0]}" for v in chosen}
    annotate(entries, measured, reasons)
