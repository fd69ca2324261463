"""The token-fidelity step of `quantgate run`, after every variant has been evaluated.

Which variants can be measured, how, and what goes into the summary; each backend declares
how (`BackendCapabilities.token_fidelity`). Variants of a `"logits"` backend (embedded
llama.cpp) with a reference of the same backend are teacher-forced on full logits in a worker
process. Variants of a `"logprobs"` backend (Ollama, an OpenAI-compatible server) with a reference
of the same backend are measured from the top-k log-probabilities the server returns (a lower
bound of the KLD), over HTTP from this process; `_FORCINGS` says how for each such backend.
On a Ray cluster (an executor that is `remote`), each variant is measured in a task of its own
with its resources, against the reference on the same node (for Ollama: the node's own server,
which has both models), and its records come back to this process. Any other pairing (a
LangChain chat model, an embedded reference with Ollama variants) is reported as not measured,
with the reason. Per (variant, case) records stream to `fidelity.jsonl`, so every pooled figure
in summary.json can be recomputed from them.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path

from graphs.extraction import prompt_messages
from quantgate.backends import BackendError, capabilities, open_variant
from quantgate.backends.llamacpp import LlamaCppChatModel
from quantgate.evaluate.executor import VariantCall, VariantExecutor
from quantgate.evaluate.options import RunOptions, extraction_context
from quantgate.evaluate.token_fidelity.forcings import logprobs_forcing
from quantgate.evaluate.token_fidelity.measurement import (
    case_prompt,
    measure_ollama_token_fidelity,
    measure_token_fidelity,
)
from quantgate.evaluate.token_fidelity.ollama_forcing import DEFAULT_TOP_LOGPROBS
from quantgate.evaluate.worker import run_isolated
from quantgate.inputs.dataset import Case, Dataset
from quantgate.inputs.variants import Variant
from quantgate.rundir.files import FIDELITY_FILE
from quantgate.rundir.lines import CaseRecord, FidelityLine
from quantgate.rundir.store import JsonLines, latest_records, read_records
from quantgate.rundir.summary import TokenFidelityEntry, VariantEntry

METHOD = (
    "teacher forcing with llama.cpp: each variant reads the case's first-attempt prompt and the "
    "reference's output; per output position KL(reference || variant) of the full next-token "
    "distributions (nats) and top-1 agreement, pooled over positions"
)
_GENERATION_OPTIONS = frozenset({"max_tokens", "grammar_engine", "fast_forward"})
"""Variant options that only concern generation, left out when the models are opened for teacher forcing."""


def unmeasured_reason(variant: Variant, reference: Variant, *, enabled: bool) -> str | None:
    """Why a variant's token fidelity cannot be measured; None when it can."""
    if not enabled:
        return "not measured: token fidelity was switched off (--no-token-fidelity)"
    kind = capabilities(variant).token_fidelity
    if kind is None:
        return f"not measured: the {variant.backend} backend exposes no logits"
    if capabilities(reference).token_fidelity != kind or reference.backend != variant.backend:
        return (
            f"not measured: the reference ({reference.backend}) and this variant ({variant.backend}) "
            "must be served by the same backend to read the same prompt"
        )
    return None


def reference_outputs(records: Mapping[str, CaseRecord], *, cases: Sequence[str]) -> dict[str, str]:
    """The reference's raw output per case of `cases`, for those answered validly on the first attempt.

    A repaired answer belongs to the repair prompt, not to the case's first prompt, so it is
    left out rather than paired with the wrong prompt. Cases the reference answered but that are
    not in `cases` (token fidelity measures the first few of a run) are left out too.
    """
    return {
        case_id: records[case_id].raw or ""
        for case_id in cases
        if case_id in records
        and records[case_id].raw
        and records[case_id].attempts == 1
        and not records[case_id].error
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

    def tags(self) -> dict[str, tuple[str, ...]]:
        """Each case's tags (its slices), by case id."""
        return {case.id: tuple(case.tags) for case in self.cases}


def _measure(job: FidelityJob) -> dict[str, TokenFidelityEntry]:
    """Teacher-force every variant on the reference's outputs; the reference is loaded once.

    The reference is opened as the run opened it, so each case's first-attempt prompt is
    built by the same code with the same context window and tokenizer.
    """
    options = RunOptions(max_repairs=job.max_repairs, progress=False)
    texts = {c.id: c.text for c in job.cases if c.id in job.outputs}
    # teacher forcing reads given tokens: no generation limit, no grammar
    engine_options = {k: v for k, v in job.reference.options.items() if k not in _GENERATION_OPTIONS}
    sink = JsonLines(job.run_dir / FIDELITY_FILE)
    with open_variant(job.reference, job.dataset.schema) as opened, closing(sink):
        if not isinstance(opened.chat_model, LlamaCppChatModel):
            raise BackendError(f"reference {job.reference.name}: not an embedded llama.cpp model")
        context = extraction_context(job.dataset, opened, options)
        prompts = {case_id: case_prompt(context, text) for case_id, text in texts.items()}

        summaries = measure_token_fidelity(
            reference=opened.chat_model.engine,
            variant_paths={v.name: Path(v.model) for v in job.variants},
            prompts=prompts,
            reference_outputs=job.outputs,
            engine_options=engine_options,
            on_case=lambda line: sink.append(FidelityLine.model_validate(line)),
            progress=job.progress,
            tags=job.tags(),
            kv_caches={v.name: v.kv_cache for v in job.variants},
        )
    return {
        name: TokenFidelityEntry.of(summary, method=METHOD, records=FIDELITY_FILE)
        for name, summary in summaries.items()
    }


def measure_logprobs(job: FidelityJob) -> dict[str, TokenFidelityEntry]:
    """Measure the variants of a `"logprobs"` server backend (Ollama, OpenAI-compatible) against a
    reference of the same backend, from this process (HTTP only).

    The reference is opened as the run opened it, so each case's first-attempt messages are
    built by the same code with the same context window.

    Raises:
        BackendError: The reference's server cannot be reached or does not have the model, or
            the backend has no forcing.
    """
    forcing, method_text = logprobs_forcing(job.reference)
    options = RunOptions(max_repairs=job.max_repairs, progress=False)
    sink = JsonLines(job.run_dir / FIDELITY_FILE)
    with open_variant(job.reference, job.dataset.schema) as opened, closing(sink):
        context = extraction_context(job.dataset, opened, options)
        messages = {c.id: prompt_messages(context, c.text)[0] for c in job.cases if c.id in job.outputs}

        summaries = measure_ollama_token_fidelity(
            reference=forcing,
            variants={v.name: logprobs_forcing(v)[0] for v in job.variants},
            messages=messages,
            reference_outputs=job.outputs,
            on_case=lambda line: sink.append(FidelityLine.model_validate(line)),
            progress=job.progress,
            tags=job.tags(),
            kv_caches={v.name: v.kv_cache for v in job.variants},
        )
    method = {
        v.name: method_text.replace("{k}", str(v.options.get("top_logprobs", DEFAULT_TOP_LOGPROBS)))
        for v in job.variants
    }
    return {
        name: TokenFidelityEntry.of(summary, method=method[name], records=FIDELITY_FILE)
        for name, summary in summaries.items()
    }


measure_ollama = measure_logprobs
"""The former name."""


def measure_in_worker(job: FidelityJob) -> dict[str, TokenFidelityEntry]:
    """Run the measurement in a fresh process (all models loaded at once, then freed).

    Raises:
        BackendError: A model could not be opened, or the worker died.
        RuntimeError: The worker failed; the message has its traceback.
    """
    return run_isolated(_measure, job, name="quantgate-token-fidelity", what="the token-fidelity worker")


_MEASURES: dict[str, Callable[[FidelityJob], dict[str, TokenFidelityEntry]]] = {
    "logits": measure_in_worker,
    "logprobs": measure_logprobs,
}
"""How each `BackendCapabilities.token_fidelity` kind is measured."""


def _measured_sent_back(job: FidelityJob) -> tuple[dict[str, TokenFidelityEntry], str]:
    """The job measured on another machine (in the process its task is): the entries, and the
    records it wrote to a fidelity.jsonl there, as text."""
    measure = _measure if capabilities(job.variants[0]).token_fidelity == "logits" else measure_logprobs
    with tempfile.TemporaryDirectory(prefix="quantgate-fidelity-") as directory:
        entries = measure(replace(job, run_dir=Path(directory)))
        records = Path(directory) / FIDELITY_FILE
        return entries, records.read_text(encoding="utf-8") if records.exists() else ""


def _measure_remote(
    template: FidelityJob, targets: Sequence[Variant], reasons: dict[str, str], executor: VariantExecutor
) -> dict[str, TokenFidelityEntry]:
    """Measure each target in a task of its own; its records are appended here as it ends."""
    calls = [
        VariantCall(
            variant=variant,
            function=_measured_sent_back,
            argument=replace(template, variants=(variant,), progress=False),
            what=f"token fidelity of variant {variant.name}",
            failures=(BackendError, RuntimeError),
        )
        for variant in targets
    ]
    measured: dict[str, TokenFidelityEntry] = {}
    for called in executor.call_each(calls):
        if called.result is None:
            print(f"quantgate: token fidelity not measured: {called.error}")
            reasons[called.call.variant.name] = f"not measured: {str(called.error).splitlines()[0]}"
            continue
        entries, records = called.result
        with (template.run_dir / FIDELITY_FILE).open("a", encoding="utf-8") as sink:
            sink.write(records)
        measured |= entries
    return measured


def annotate(
    entries: Sequence[VariantEntry], measured: Mapping[str, TokenFidelityEntry], reasons: Mapping[str, str]
) -> None:
    """Put each variant's token fidelity (or why it is missing) into its summary entry."""
    for entry in entries:
        if entry.status != "ok" or entry.is_reference:
            continue
        found = measured.get(entry.name)
        entry.token_fidelity = found if found is not None and found.positions else None
        if entry.token_fidelity is not None:
            entry.token_fidelity_missing = None
        elif found is not None:
            entry.token_fidelity_missing = (
                f"not measured: no position could be compared (see {FIDELITY_FILE})"
            )
        else:
            entry.token_fidelity_missing = reasons.get(entry.name, "not measured")


def _measure_by_kind(
    template: FidelityJob,
    targets: Sequence[Variant],
    reasons: dict[str, str],
    executor: VariantExecutor | None,
) -> dict[str, TokenFidelityEntry]:
    """Measure the targets, grouped by their backend's token-fidelity kind (on a cluster: each
    in a task of its own).

    A group whose measurement fails gets the failure as its reason, added to `reasons`.
    """
    if executor is not None and executor.remote:
        return _measure_remote(template, targets, reasons, executor)
    measured: dict[str, TokenFidelityEntry] = {}
    for kind, measure in _MEASURES.items():
        chosen = tuple(v for v in targets if capabilities(v).token_fidelity == kind)
        if not chosen:
            continue
        try:
            measured |= measure(replace(template, variants=chosen))
        except (RuntimeError, BackendError) as exc:
            print(f"quantgate: token fidelity not measured: {exc}")
            reasons |= {v.name: f"not measured: {str(exc).splitlines()[0]}" for v in chosen}
    return measured


def token_fidelity_step(
    *,
    dataset: Dataset,
    cases: Sequence[Case],
    variants: Sequence[Variant],
    reference_name: str,
    entries: list[VariantEntry],
    run_dir: Path,
    enabled: bool,
    max_repairs: int,
    progress: bool,
    executor: VariantExecutor | None = None,
) -> None:
    """Measure token fidelity where it can be, and say why where it cannot.

    Fills `token_fidelity` / `token_fidelity_missing` in the summary `entries` in place. The
    measurement runs here (in a worker process for embedded models), or on the cluster of a
    remote `executor`.
    """
    ok = {e.name for e in entries if e.status == "ok"}
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
    records = latest_records(read_records(run_dir)).get(reference_name, {})
    outputs = reference_outputs(records, cases=[case.id for case in cases])
    if targets and not outputs:
        missing = "not measured: no case answered validly by the reference at first try"
        reasons |= {v.name: missing for v in targets}
        targets = []
    template = FidelityJob(
        reference=reference,
        variants=(),
        dataset=dataset,
        cases=tuple(cases),
        outputs=outputs,
        run_dir=run_dir,
        max_repairs=max_repairs,
        progress=progress,
    )
    annotate(entries, _measure_by_kind(template, targets, reasons, executor), reasons)
