"""The token-fidelity step of `quantgate run`, after every variant has been evaluated.

Which variants can be measured, how, and what goes into the summary; each backend declares
how (`BackendCapabilities.token_fidelity`). Variants of a `"logits"` backend (embedded
llama.cpp) with a reference of the same backend are teacher-forced on full logits in a worker
process. Variants of a `"logprobs"` backend (Ollama, an OpenAI-compatible server) with a reference
of the same backend (and, for an OpenAI-compatible one, the same `api`) are measured from the
top-k log-probabilities the server returns (a lower bound of the KLD), over HTTP from this
process; the forcing the backend declares (`BackendCapabilities.logprobs_forcing`) says how
(`_forcings.py`). An OpenAI-compatible variant whose prompt text is unknown (the chat API, on a
server without `/apply-template`) is reported as not measured.
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
from dataclasses import replace
from pathlib import Path

from langchain_core.messages import BaseMessage

from graphs.long_inputs import prompt_messages
from quantgate.backends import BackendError, backend_options, capabilities, open_variant, options_of
from quantgate.backends._extraction_context import case_context
from quantgate.backends._forcing import Forcing
from quantgate.backends.llamacpp._llamacpp import LlamaCppChatModel
from quantgate.backends.llamacpp._llamacpp_options import LlamaCppOptions
from quantgate.evaluate._options import RunOptions, extraction_context
from quantgate.evaluate.scheduler._executor import VariantCall, VariantExecutor
from quantgate.evaluate.scheduler._worker import run_isolated
from quantgate.evaluate.token_fidelity._forcings import forcing_problem, logprobs_forcing
from quantgate.evaluate.token_fidelity._job import (
    SWITCHED_OFF,
    FidelityJob,
    FidelityStep,
    figure_or_reason,
    no_outputs,
)
from quantgate.evaluate.token_fidelity._measurement import (
    case_prompt,
    measure_ollama_token_fidelity,
    measure_token_fidelity,
)
from quantgate.evaluate.token_fidelity._pair_fidelity import runtime_pair_fidelity
from quantgate.inputs._dataset import Case, Dataset
from quantgate.inputs._variants import Variant
from quantgate.rundir._files import FIDELITY_FILE
from quantgate.rundir._lines import CaseRecord, FidelityLine
from quantgate.rundir._store import JsonLines, latest_records, read_records
from quantgate.rundir._summary import TokenFidelityEntry, VariantEntry

METHOD = (
    "teacher forcing with llama.cpp: each variant reads the case's first-attempt prompt and the "
    "reference's output; per output position KL(reference || variant) of the full next-token "
    "distributions (nats) and top-1 agreement, pooled over positions"
)


Measured = Mapping[str, TokenFidelityEntry | str]
"""What a measurement gives: per variant its token fidelity, or why it was not measured."""


def unmeasured_reason(variant: Variant, reference: Variant, *, enabled: bool) -> str | None:
    """Why a variant's token fidelity cannot be measured; None when it can.

    The reference and the variant must read the same prompt: the same backend, the same prompt
    options (an embedded variant's `chat_template`, `BackendOptions.prompt_format`) and, for one that
    speaks the OpenAI API, the same `api` (a chat variant reads the server's template, a
    completions variant the text quantgate renders).
    """
    if not enabled:
        return SWITCHED_OFF
    kind = capabilities(variant).token_fidelity
    if kind is None:
        return f"not measured: the {variant.backend} backend exposes no logits"
    if capabilities(reference).token_fidelity != kind or reference.backend != variant.backend:
        return (
            f"not measured: the reference ({reference.backend}) and this variant ({variant.backend}) "
            "must be served by the same backend to read the same prompt"
        )
    read, given = backend_options(variant).prompt_format(), backend_options(reference).prompt_format()
    if read != given:
        return (
            f"not measured: this variant reads {read or 'the base-model prompt'} and the reference "
            f"{given or 'the base-model prompt'}; token fidelity compares them on the same prompt"
        )
    declared = capabilities(variant).logprobs_forcing
    return None if declared is None else declared.prompt_mismatch(variant, reference)


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


def _measure(job: FidelityJob) -> dict[str, TokenFidelityEntry | str]:
    """Teacher-force every variant on the reference's outputs; the reference is loaded once.

    The reference is opened as the run opened it, so each case's first-attempt prompt is
    built by the same code with the same context window and tokenizer.
    """
    options = RunOptions(max_repairs=job.max_repairs, progress=False)
    texts = {c.id: c.text for c in job.cases if c.id in job.outputs}
    # teacher forcing reads given tokens: no generation limit, no grammar
    engine_options = options_of(job.reference, LlamaCppOptions).engine_options(generation=False)
    sink = JsonLines(job.run_dir / FIDELITY_FILE)
    with open_variant(job.reference, job.dataset.schema) as opened, closing(sink):
        if not isinstance(opened.chat_model, LlamaCppChatModel):
            raise BackendError(f"reference {job.reference.name}: not an embedded llama.cpp model")
        context = extraction_context(job.dataset, opened, options)
        prompts = {i: case_prompt(case_context(context, job.dataset, i), text) for i, text in texts.items()}

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


def _variant_forcings(variants: Sequence[Variant]) -> tuple[dict[str, Forcing], dict[str, str]]:
    """Each variant's forcing, and why for those whose forcing cannot be made (an option its backend
    refuses): one variant's bad option costs that variant its figure, not the others theirs."""
    forcings: dict[str, Forcing] = {}
    problems: dict[str, str] = {}
    for variant in variants:
        try:
            forcings[variant.name] = logprobs_forcing(variant)[0]
        except BackendError as exc:
            problems[variant.name] = str(exc).splitlines()[0]
    return forcings, problems


def _prompt_problems(
    reference: tuple[Variant, Forcing],
    variants: Sequence[tuple[Variant, Forcing]],
    sample: Sequence[BaseMessage] | None,
) -> dict[str, str]:
    """Variant name to why its forcing cannot follow a target after the `sample` messages.

    Raises:
        BackendError: The reference's forcing cannot (then no variant can be measured).
    """
    if sample is None:
        return {}
    problem = forcing_problem(*reference, sample)
    if problem is not None:
        raise BackendError(f"the reference: {problem}")
    found = {variant.name: forcing_problem(variant, forcing, sample) for variant, forcing in variants}
    return {name: why for name, why in found.items() if why is not None}


def measure_logprobs(job: FidelityJob) -> dict[str, TokenFidelityEntry | str]:
    """Measure the variants of a `"logprobs"` server backend (Ollama, OpenAI-compatible) against a
    reference of the same backend, from this process (HTTP only).

    The reference is opened as the run opened it, so each case's first-attempt messages are
    built by the same code with the same context window. A variant whose forcing cannot follow
    a target (an OpenAI-compatible server whose prompt text is unknown) gets why, not a figure.

    Raises:
        BackendError: The reference's server cannot be reached or does not have the model, the
            backend has no forcing, or the reference's prompt text is unknown.
    """
    forcing, method_text = logprobs_forcing(job.reference)
    options = RunOptions(max_repairs=job.max_repairs, progress=False)
    sink = JsonLines(job.run_dir / FIDELITY_FILE)
    with open_variant(job.reference, job.dataset.schema) as opened, closing(sink):
        context = extraction_context(job.dataset, opened, options)
        messages = {
            c.id: prompt_messages(case_context(context, job.dataset, c.id), c.text)[0]
            for c in job.cases
            if c.id in job.outputs
        }
        forcings, unbuilt = _variant_forcings(job.variants)
        by_variant = [(v, forcings[v.name]) for v in job.variants if v.name in forcings]
        sample = next(iter(messages.values()), None)
        problems = unbuilt | _prompt_problems((job.reference, forcing), by_variant, sample)

        summaries = measure_ollama_token_fidelity(
            reference=forcing,
            variants={name: f for name, f in forcings.items() if name not in problems},
            messages=messages,
            reference_outputs=job.outputs,
            on_case=lambda line: sink.append(FidelityLine.model_validate(line)),
            progress=job.progress,
            tags=job.tags(),
            kv_caches={v.name: v.kv_cache for v in job.variants},
        )
    method = {name: method_text.replace("{k}", str(f.top_logprobs)) for name, f in forcings.items()}
    return problems | {
        name: TokenFidelityEntry.of(summary, method=method[name], records=FIDELITY_FILE)
        for name, summary in summaries.items()
    }


def measure_in_worker(job: FidelityJob) -> dict[str, TokenFidelityEntry | str]:
    """Run the measurement in a fresh process (all models loaded at once, then freed).

    Raises:
        BackendError: A model could not be opened, or the worker died.
        RuntimeError: The worker failed; the message has its traceback.
    """
    return run_isolated(_measure, job, name="quantgate-token-fidelity", what="the token-fidelity worker")


_MEASURES: dict[str, Callable[[FidelityJob], Measured]] = {
    "logits": measure_in_worker,
    "logprobs": measure_logprobs,
}
"""How each `BackendCapabilities.token_fidelity` kind is measured."""


def _kept(found: Measured, reasons: dict[str, str]) -> dict[str, TokenFidelityEntry]:
    """The measured entries of `found`; the reasons of those not measured go into `reasons`."""
    reasons |= {name: f"not measured: {why}" for name, why in found.items() if isinstance(why, str)}
    return {name: entry for name, entry in found.items() if not isinstance(entry, str)}


def _measured_sent_back(job: FidelityJob) -> tuple[Measured, str]:
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
        measured |= _kept(entries, reasons)
    return measured


def annotate(
    entries: Sequence[VariantEntry], measured: Mapping[str, TokenFidelityEntry], reasons: Mapping[str, str]
) -> None:
    """Put each variant's token fidelity (or why it is missing) into its summary entry."""
    for entry in entries:
        if entry.status == "ok" and not entry.is_reference:
            found = figure_or_reason(measured.get(entry.name), reasons.get(entry.name))
            entry.token_fidelity, entry.token_fidelity_missing = found


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
            measured |= _kept(measure(replace(template, variants=chosen)), reasons)
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

    Fills `token_fidelity` / `token_fidelity_missing` in the summary `entries` in place (against
    the reference, when it was evaluated), then the runtime pairs' `runtime_token_fidelity` (against
    their embedded base, whether or not the reference was). The measurement runs here (in a worker
    process for embedded models), or on the cluster of a remote `executor`.
    """
    step = FidelityStep(dataset=dataset, cases=cases, variants=variants, reference_name=reference_name,
                        entries=entries, run_dir=run_dir, enabled=enabled, max_repairs=max_repairs,
                        progress=progress, executor=executor)  # fmt: skip
    if reference_name in step.ok():
        _against_reference(step)
    runtime_pair_fidelity(step, outputs_of=reference_outputs)


def _against_reference(step: FidelityStep) -> None:
    """Each variant's token fidelity against the (evaluated) reference, or why it is not measured."""
    ok, reference_name = step.ok(), step.reference_name
    reference = next(v for v in step.variants if v.name == reference_name)
    reasons: dict[str, str] = {}
    targets = []
    for variant in step.variants:
        if variant.name == reference_name or variant.name not in ok:
            continue
        reason = unmeasured_reason(variant, reference, enabled=step.enabled)
        if reason:
            reasons[variant.name] = reason
        else:
            targets.append(variant)
    records = latest_records(read_records(step.run_dir)).get(reference_name, {})
    outputs = reference_outputs(records, cases=[case.id for case in step.cases])
    if targets and not outputs:
        reasons |= {v.name: no_outputs("the reference") for v in targets}
        targets = []
    template = FidelityJob(
        reference=reference,
        variants=(),
        dataset=step.dataset,
        cases=tuple(step.cases),
        outputs=outputs,
        run_dir=step.run_dir,
        max_repairs=step.max_repairs,
        progress=step.progress,
    )
    annotate(step.entries, _measure_by_kind(template, targets, reasons, step.executor), reasons)
