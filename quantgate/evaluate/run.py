"""`quantgate run`: every variant over a dataset, reference first, into `runs/<run-id>/`.

For each variant: load it (memory read before and after), run the evaluation graph over
the cases with an RSS sampler going, write each case's record as it finishes, then free
the model before the next variant. summary.json is rewritten after every variant, so an
interrupted run leaves a readable directory.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from evaluators import CaseScorer
from evaluators.memory import MemoryReading
from graphs.evaluation import CaseInput, CaseOutcome, EvaluationContext
from graphs.evaluation import graph as evaluation_graph
from graphs.extraction import ExtractionContext
from quantgate.backends import BackendError, OpenedVariant, open_variant
from quantgate.dataset import Case, Dataset, write_dataset
from quantgate.hardware import hardware, package_version
from quantgate.measure import RssSampler, rss_mb
from quantgate.run_fidelity import token_fidelity_step
from quantgate.runstore import DATASET_DIR, RUN_FORMAT_VERSION, RunStore, case_record
from quantgate.variants import Variant, VariantSet
from quantgate.worker import WorkerDiedError, WorkerFailedError, run_in_worker


@dataclass(kw_only=True)
class RunOptions:
    """How to run.

    Attributes:
        limit: Evaluate only this many cases, balanced across `lang:` tags in file order.
        concurrency: Cases in flight at once per variant (the embedded backend serializes
            calls on one model, so more only helps server backends).
        max_repairs: Extra attempts after an invalid output.
        out: Directory under which `<run-id>/` is created.
        progress: Show progress bars.
        token_fidelity: Measure token-level KLD and top-1 agreement of embedded variants
            against the reference by teacher forcing, after all variants have run.
    """

    limit: int | None = None
    concurrency: int = 1
    max_repairs: int = 2
    out: Path = field(default_factory=lambda: Path("runs"))
    progress: bool = True
    token_fidelity: bool = True


def select_cases(cases: Sequence[Case], limit: int | None) -> list[Case]:
    """The first `limit` cases, taken in turn from each language so both are represented."""
    if limit is None or limit >= len(cases):
        return list(cases)
    groups: dict[str | None, list[Case]] = defaultdict(list)
    for case in cases:
        groups[case.lang].append(case)
    interleaved = (c for batch in itertools.zip_longest(*groups.values()) for c in batch if c is not None)
    chosen = {id(c) for c in itertools.islice(interleaved, limit)}
    return [c for c in cases if id(c) in chosen]


def order_variants(variant_set: VariantSet, reference: str | None) -> tuple[list[Variant], str]:
    """Variants with the reference first; the reference defaults to the file's, else the first."""
    name = reference or variant_set.reference or variant_set.variants[0].name
    names = [v.name for v in variant_set.variants]
    if name not in names:
        raise ValueError(f"reference {name!r} is not one of the variants ({', '.join(names)})")
    ordered = sorted(variant_set.variants, key=lambda v: v.name != name)
    return ordered, name


@dataclass(kw_only=True)
class _VariantRun:
    summary: dict[str, Any]
    records: dict[str, dict[str, Any] | None]
    metadata: dict[str, Any]


def _case_inputs(cases: Sequence[Case]) -> list[CaseInput]:
    return [CaseInput(id=c.id, text=c.text, expected=c.expected, tags=list(c.tags)) for c in cases]


def extraction_context(dataset: Dataset, opened: OpenedVariant, options: RunOptions) -> ExtractionContext:
    """The extraction graph's context for a dataset and an opened variant (prompt, limits, retries)."""
    return ExtractionContext(
        model=opened.chat_model,
        schema=dataset.schema,
        examples=[(e.text, e.expected) for e in dataset.examples if e.expected is not None],
        max_repairs=options.max_repairs,
        context_window=opened.context_window,
        max_output_tokens=opened.max_output_tokens,
        count_tokens=opened.count_tokens,
        max_retries=opened.max_retries,
        retry_backoff_s=opened.retry_backoff_s,
    )


@dataclass(frozen=True, kw_only=True)
class _VariantJob:
    """Everything needed to evaluate one variant; picklable, so it can go to a worker."""

    variant: Variant
    dataset: Dataset
    cases: tuple[Case, ...]
    run_dir: Path
    reference_records: dict[str, dict[str, Any] | None] | None
    options: RunOptions


def _evaluate_variant(job: _VariantJob) -> _VariantRun:
    variant, dataset, options = job.variant, job.dataset, job.options
    store = RunStore(job.run_dir)
    before = rss_mb()
    progress = tqdm(total=len(job.cases), desc=variant.name, unit="case", disable=not options.progress)

    def on_record(outcome: CaseOutcome) -> None:
        store.write_record(case_record(variant.name, outcome))
        progress.update(1)

    with store, progress, open_variant(variant, dataset.schema) as opened, _sampler(opened) as sampler:
        in_process = opened.memory_pid is None
        after = sampler.start_mb
        context = EvaluationContext(
            extraction=extraction_context(dataset, opened, options),
            scorer=CaseScorer(schema=dataset.schema),
            reference_records=job.reference_records,
            on_record=on_record,
            memory=lambda: MemoryReading(
                rss_before_load_mb=before if in_process else None,
                rss_after_load_mb=after if in_process else None,
                rss_peak_mb=sampler.peak_mb,
                samples=sampler.samples,
                file_size_bytes=variant.file_size_bytes,
                reported_model_bytes=opened.reported_memory_bytes,
                reported_vram_bytes=opened.reported_vram_bytes,
                process="quantgate worker" if in_process else f"server pid {opened.memory_pid} and children",
            ),
        )
        output = evaluation_graph.invoke(
            {"cases": _case_inputs(job.cases)},
            context=context,
            config={"max_concurrency": options.concurrency},
        )
        metadata = {**variant.record(), "runtime": opened.runtime, "hardware": hardware()}
    outcomes: list[CaseOutcome] = output["outcomes"]
    # only the reference's records are used (for agreement); the others would be held for nothing
    is_reference = job.reference_records is None
    records = {
        o.case_id: o.extraction.record if o.extraction.valid else None for o in outcomes if is_reference
    }
    summary = {**output["summary"], "quantization": variant.quantization or opened.quantization}
    return _VariantRun(summary=summary, records=records, metadata=metadata)


def _sampler(opened: OpenedVariant) -> RssSampler:
    """This process's RSS, or the local server process tree that holds the model."""
    if opened.memory_pid is None:
        return RssSampler()
    return RssSampler(pid=opened.memory_pid, include_children=True)


def _evaluate_isolated(job: _VariantJob) -> _VariantRun:
    """Evaluate a variant in a fresh process, so its memory figures start from a clean slate.

    llama.cpp does not hand all memory back when a model is freed (about 200 MiB stays), so
    measuring variants one after another in one process would inflate the later ones. A
    worker that dies (a crash inside llama.cpp) makes the variant fail, not the run. A chat
    model object given from Python cannot cross processes and runs here instead.
    """
    if job.variant.chat_model is not None:
        return _evaluate_variant(job)
    name = job.variant.name
    try:
        return run_in_worker(_evaluate_variant, job, name=f"quantgate-{name}")
    except WorkerDiedError as exc:
        raise BackendError(f"variant {name}: {exc}") from None
    except WorkerFailedError as exc:
        raise RuntimeError(f"variant {name} failed in its worker process:\n{exc}") from None


def _variant_entry(variant: Variant, part: dict[str, Any], is_reference: bool) -> dict[str, Any]:
    return {
        "name": variant.name,
        "backend": variant.backend,
        "quantization": variant.quantization,
        "is_reference": is_reference,
        "status": "ok",
        **part,
    }


def _with_deltas(entries: list[dict[str, Any]], reference: str) -> list[dict[str, Any]]:
    ref = next((e for e in entries if e["name"] == reference and e["status"] == "ok"), None)
    ref_acc = ref.get("field_accuracy") if ref else None
    for entry in entries:
        acc = entry.get("field_accuracy")
        delta = acc - ref_acc if acc is not None and ref_acc is not None and entry is not ref else None
        entry["field_accuracy_delta"] = delta
    return entries


def _copy_cases(dataset: Dataset, cases: Sequence[Case], store: RunStore) -> None:
    card = (
        f"# Cases of `{dataset.name}` evaluated in run {store.run_id}\n\n"
        f"A copy written by `quantgate run`: {len(cases)} of the {len(dataset.cases)} cases of "
        f"{dataset.path} (sha256 {dataset.sha256}).\n\n{dataset.card or ''}"
    )
    write_dataset(
        store.directory / DATASET_DIR,
        schema=dataset.schema,
        cases=cases,
        examples=dataset.examples,
        card=card,
    )


def run_evaluation(
    dataset: Dataset,
    variant_set: VariantSet,
    *,
    reference: str | None = None,
    options: RunOptions | None = None,
) -> Path:
    """Evaluate every variant on the dataset and write the run directory.

    Returns:
        The run directory (`<out>/<run-id>`), complete with records, variants and summary.
    """
    options = options or RunOptions()
    variants, reference_name = order_variants(variant_set, reference)
    cases = select_cases(dataset.cases, options.limit)
    store = RunStore.create(options.out)
    _copy_cases(dataset, cases, store)
    summary: dict[str, Any] = {
        "format_version": RUN_FORMAT_VERSION,
        "run_id": store.run_id,
        "quantgate_version": package_version("quantgate"),
        "status": "running",
        "dataset": {
            "name": dataset.name,
            "path": str(dataset.path),
            "sha256": dataset.sha256,
            "cases": len(cases),
            "cases_in_dataset": len(dataset.cases),
            "labeled": dataset.labeled,
        },
        "reference": reference_name,
        "options": {
            "limit": options.limit,
            "concurrency": options.concurrency,
            "max_repairs": options.max_repairs,
        },
        "hardware": hardware(),
        "variants": [],
    }
    entries: list[dict[str, Any]] = []
    metadata: list[dict[str, Any]] = []
    reference_records: dict[str, dict[str, Any] | None] | None = None
    try:
        for variant in variants:
            is_reference = variant.name == reference_name
            try:
                job = _VariantJob(
                    variant=variant,
                    dataset=dataset,
                    cases=tuple(cases),
                    run_dir=store.directory,
                    reference_records=reference_records,
                    options=options,
                )
                result = _evaluate_isolated(job)
            except BackendError as exc:
                print(f"quantgate: skipping variant {variant.name}: {exc}")
                entries.append(
                    {**_variant_entry(variant, {}, is_reference), "status": "skipped", "error": str(exc)}
                )
                metadata.append({**variant.record(), "error": str(exc)})
            else:
                entries.append(_variant_entry(variant, result.summary, is_reference))
                metadata.append(result.metadata)
                if is_reference:
                    reference_records = result.records
            summary["variants"] = _with_deltas(entries, reference_name)
            store.write_variants(metadata)
            store.write_summary(summary)
        token_fidelity_step(
            dataset=dataset,
            cases=cases,
            variants=variants,
            reference_name=reference_name,
            entries=entries,
            run_dir=store.directory,
            enabled=options.token_fidelity,
            max_repairs=options.max_repairs,
            progress=options.progress,
        )
        summary["status"] = "complete"
    except KeyboardInterrupt:
        summary["status"] = "interrupted"
        raise
    finally:
        store.write_summary(summary)
        store.close()
    return store.directory
