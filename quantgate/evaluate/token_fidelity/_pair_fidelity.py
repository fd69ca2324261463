"""Token fidelity between the two members of a runtime pair: the same model file (same sha256) on
the embedded backend and behind an OpenAI-compatible server.

The run measures token fidelity against its reference, between variants of one backend
(`run_step`). A runtime pair (`quantgate.backends._runtime_pairs.same_file_pairs`) whose base is an
embedded variant and whose other member is an `openai` variant with `api = "completions"` (whose
server reads exactly the embedded backend's prompt text; its backend's `LogprobsForcing.pair_member`)
is measured here as well, along the base's first-attempt outputs (chosen as the reference's are,
`run_step.reference_outputs`): the base's full logits cut to their top-k (`EmbeddedForcing`)
against the server's top-k (`OpenAIForcing`), the same k on both sides, compared by
`measure_ollama_token_fidelity` (a top-k lower bound of the KLD, and top-1 agreement).

Both sides decode the output one token at a time, as both runtimes generate: the embedded
forcing with one row per llama.cpp call, the server by resumed greedy completion (its echo is not
used). llama.cpp's CPU kernels are not batch-invariant: the same file scored in a batch differs
from its one-token decoding by up to a few tenths of a nat in a token's log-probability (measured
on Gemma 3 270M Q4_K_M), which would be charged to the runtime; decoded one token at a time, the
embedded lists equal the server's. (On `llama_cpp.server` an echo also costs a Python sort of the
whole vocabulary at every prompt token.)

The base is loaded in a worker process (`run_isolated`), as the run's own embedded token fidelity
is, so the run's memory figures are not touched. Records go to fidelity.jsonl with `base` naming
the pair's base; the figures go to the member's summary entry (`runtime_token_fidelity`,
`runtime_token_fidelity_base`), or why not (`runtime_token_fidelity_missing`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import closing
from pathlib import Path
from typing import Protocol

from langchain_core.messages import BaseMessage

from evaluators.fidelity import TokenFidelitySummary
from graphs.long_inputs import prompt_messages
from quantgate.backends import BackendError, capabilities, open_variant
from quantgate.backends._extraction_context import case_context
from quantgate.backends._forcing import Forcing
from quantgate.backends._runtime_pairs import same_file_pairs
from quantgate.backends.llamacpp._embedded_forcing import EmbeddedForcing
from quantgate.backends.llamacpp._llamacpp import LlamaCppChatModel
from quantgate.evaluate._options import RunOptions, extraction_context
from quantgate.evaluate.scheduler._executor import VariantExecutor
from quantgate.evaluate.scheduler._worker import run_isolated
from quantgate.evaluate.token_fidelity._forcings import pair_member_forcing
from quantgate.evaluate.token_fidelity._job import (
    SWITCHED_OFF,
    FidelityJob,
    FidelityStep,
    figure_or_reason,
    no_outputs,
)
from quantgate.evaluate.token_fidelity._measurement import measure_ollama_token_fidelity
from quantgate.inputs._variants import Variant
from quantgate.rundir._files import FIDELITY_FILE, VARIANTS_FILE
from quantgate.rundir._jsonfile import read_model
from quantgate.rundir._lines import CaseRecord, FidelityLine
from quantgate.rundir._store import JsonLines, latest_records, read_records
from quantgate.rundir._summary import TokenFidelityEntry, VariantEntry, VariantsFile

__all__ = ["RUNTIME_METHOD", "pair_reason", "runtime_pair_fidelity"]

RUNTIME_METHOD = (
    "the same model file on two runtimes, a top-{k} lower bound: the embedded base's full logits "
    "(llama.cpp teacher forcing one token at a time, log-softmax cut to the top {k}) against the top-{k} "
    "log-probabilities of the OpenAI-compatible server's greedy /v1/completions (resumed after each "
    "disagreement), along the base's first-attempt output after "
    "the case's prompt rendered by quantgate (render_prompt; the variant's api = \"completions\"); "
    "per output position a lower bound of KL(base || variant) from the two top-{k} lists (tokens "
    "outside both merged into one bucket, nats) and top-1 agreement, pooled over positions"
)


def pair_reason(base: Variant, variant: Variant) -> str | None:
    """Why a pair's member cannot be measured against its base here; None when it can."""
    if capabilities(base).token_fidelity != "logits":
        return (
            f"not measured: the pair's base {base.name} ({base.backend}) gives no full logits; the same "
            "model file is compared only with an embedded (llamacpp) base"
        )
    if capabilities(variant).token_fidelity != "logprobs":
        return f"not measured: the {variant.backend} backend gives no top-k log-probabilities"
    try:
        pair_member_forcing(variant)
    except BackendError as exc:
        return f"not measured: {exc}"
    return None


class OutputSelector(Protocol):
    """How a variant's outputs are chosen for teacher forcing (`run_step.reference_outputs`)."""

    def __call__(self, records: Mapping[str, CaseRecord], *, cases: Sequence[str]) -> dict[str, str]:
        """Case id to the output text to follow, for the cases of `cases` it can be followed on."""
        ...


def measure_member(
    *,
    base: str,
    reference: Forcing,
    member: str,
    forcing: Forcing,
    messages: Mapping[str, Sequence[BaseMessage]],
    outputs: Mapping[str, str],
    sink: JsonLines,
    tags: Mapping[str, Sequence[str]],
    progress: bool = False,
) -> TokenFidelitySummary:
    """One member followed along the base's outputs and compared with the base's lists; each
    (member, case) record is appended to `sink` with `base` naming the base."""
    summaries = measure_ollama_token_fidelity(
        reference=reference,
        variants={member: forcing},
        messages=messages,
        reference_outputs=outputs,
        on_case=lambda line: sink.append(FidelityLine.model_validate({**line, "base": base})),
        progress=progress,
        tags=tags,
    )
    return summaries[member]


def measure_pairs(job: FidelityJob) -> dict[str, TokenFidelityEntry]:
    """Measure each member (`job.variants`) against the base (`job.reference`, the pairs' embedded
    variant) along the base's outputs (in the worker process).

    Raises:
        BackendError: The base cannot be opened or is not embedded, or a member's server is unusable.
    """
    options = RunOptions(max_repairs=job.max_repairs, progress=False)
    sink = JsonLines(job.run_dir / FIDELITY_FILE)
    entries: dict[str, TokenFidelityEntry] = {}
    with open_variant(job.reference, job.dataset.schema) as opened, closing(sink):
        if not isinstance(opened.chat_model, LlamaCppChatModel):
            raise BackendError(f"base {job.reference.name}: not an embedded llama.cpp model")
        context = extraction_context(job.dataset, opened, options)
        messages = {
            c.id: prompt_messages(case_context(context, job.dataset, c.id), c.text)[0]
            for c in job.cases
            if c.id in job.outputs
        }
        llama = opened.chat_model.engine.llama
        for member in job.variants:
            forcing = pair_member_forcing(member)
            k = forcing.top_logprobs
            summary = measure_member(
                base=job.reference.name,
                reference=EmbeddedForcing(llama=llama, top_logprobs=k, rows_per_batch=1),
                member=member.name,
                forcing=forcing,
                messages=messages,
                outputs=job.outputs,
                sink=sink,
                tags=job.tags(),
                progress=job.progress,
            )
            method = RUNTIME_METHOD.replace("{k}", str(k))
            entries[member.name] = TokenFidelityEntry.of(summary, method=method, records=FIDELITY_FILE)
    return entries


def _measure_in_worker(job: FidelityJob) -> dict[str, TokenFidelityEntry]:
    return run_isolated(
        measure_pairs, job, name="quantgate-runtime-fidelity", what="the runtime pairs' token-fidelity worker"
    )


def _listed(variants: Sequence[Variant], ok: set[str], run_dir: Path) -> list[tuple[str, str, str | None]]:
    """(name, backend, sha256) of the evaluated variants in run order, the sha256 as variants.json
    records it (else as the variant gives it)."""
    path = run_dir / VARIANTS_FILE
    recorded = read_model(path, VariantsFile).by_name() if path.is_file() else {}
    return [
        (v.name, v.backend, recorded[v.name].sha256 if v.name in recorded else v.sha256)
        for v in variants
        if v.name in ok
    ]


def _annotate(
    entries: Sequence[VariantEntry],
    pairs: Sequence[tuple[str, str]],
    measured: Mapping[str, TokenFidelityEntry],
    reasons: Mapping[str, str],
) -> None:
    """Put each member's runtime token fidelity (or why it is missing) into its summary entry."""
    by_name = {entry.name: entry for entry in entries}
    for base, name in pairs:
        entry = by_name[name]
        entry.runtime_token_fidelity_base = base
        found = figure_or_reason(measured.get(name), reasons.get(name))
        entry.runtime_token_fidelity, entry.runtime_token_fidelity_missing = found


def _step_reason(enabled: bool, executor: VariantExecutor | None) -> str | None:
    if not enabled:
        return SWITCHED_OFF
    if executor is not None and executor.remote:
        return "not measured: runtime pairs are measured on this machine only, not on a cluster"
    return None


def runtime_pair_fidelity(step: FidelityStep, *, outputs_of: OutputSelector) -> None:
    """Measure every runtime pair's member against its embedded base, where it can be, and say why
    where it cannot (`outputs_of` chooses the base's outputs as the reference's are chosen,
    `run_step.reference_outputs`).

    Fills `runtime_token_fidelity`, `runtime_token_fidelity_base` and `runtime_token_fidelity_missing`
    of each pair member's summary entry in place; a variant in no pair is left as it is.
    """
    by_name = {v.name: v for v in step.variants}
    listed = _listed(step.variants, step.ok(), step.run_dir)
    pairs = [(base, name) for base, name, _ in same_file_pairs(listed, step.reference_name)]
    reasons: dict[str, str] = {}
    members: dict[str, list[Variant]] = {}
    for base, name in pairs:
        reason = _step_reason(step.enabled, step.executor) or pair_reason(by_name[base], by_name[name])
        if reason:
            reasons[name] = reason
        else:
            members.setdefault(base, []).append(by_name[name])
    records = latest_records(read_records(step.run_dir)) if members else {}
    measured: dict[str, TokenFidelityEntry] = {}
    for base, chosen in members.items():
        outputs = outputs_of(records.get(base, {}), cases=[case.id for case in step.cases])
        if not outputs:
            reasons |= {v.name: no_outputs(base) for v in chosen}
            continue
        job = FidelityJob(reference=by_name[base], variants=tuple(chosen), dataset=step.dataset,
                          cases=tuple(step.cases), outputs=outputs, run_dir=step.run_dir,
                          max_repairs=step.max_repairs, progress=step.progress)  # fmt: skip
        try:
            measured |= _measure_in_worker(job)
        except (RuntimeError, BackendError) as exc:
            print(f"quantgate: runtime token fidelity not measured: {exc}")
            reasons |= {v.name: f"not measured: {str(exc).splitlines()[0]}" for v in chosen}
    _annotate(step.entries, pairs, measured, reasons)
