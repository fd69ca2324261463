"""`quantgate run`: every variant over a dataset, reference first, into `runs/<run-id>/`.

For each variant: load it (memory read before and after), run the evaluation graph over
the cases with an RSS sampler going, write each case's record as it finishes, then free
the model before the next variant. summary.json is rewritten after every variant, so an
interrupted run leaves a readable directory.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from evaluators import CaseScorer
from evaluators.baselines import BaselineScores, baseline_accuracy, baseline_scores
from evaluators.comparison import accuracy_delta
from evaluators.latency import throughput
from evaluators.memory import MemoryReading
from graphs.evaluation import CaseInput, CaseOutcome, EvaluationContext, rounds_limit
from graphs.evaluation import graph as evaluation_graph
from quantgate.backends import BackendError, OpenedVariant, capabilities, open_variant
from quantgate.evaluate.fidelity_step import token_fidelity_step
from quantgate.evaluate.measure import RssSampler, rss_mb
from quantgate.evaluate.options import (
    RunOptions,
    extraction_context,
    run_cases,
    select_cases,
    variant_concurrency,
)
from quantgate.evaluate.sequential import SequentialJudge
from quantgate.evaluate.signals import note_run_dir
from quantgate.evaluate.worker import run_isolated
from quantgate.inputs.dataset import Case, Dataset, write_dataset
from quantgate.inputs.examples import ChosenExamples, choose_examples
from quantgate.inputs.variants import Variant, VariantSet
from quantgate.rundir.build import (
    baselines_info,
    case_record,
    dataset_info,
    new_summary,
    skipped_entry,
    variant_entry,
    variant_metadata,
)
from quantgate.rundir.files import DATASET_DIR
from quantgate.rundir.pairing import paired_cases
from quantgate.rundir.store import RunStore, latest_records, read_records
from quantgate.rundir.summary import (
    ExamplesInfo,
    RunOptionsInfo,
    RunSummary,
    SequentialEntry,
    VariantEntry,
    VariantMetadata,
    VariantsFile,
)

__all__ = ["RunOptions", "order_variants", "run_evaluation", "select_cases"]


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
    entry: VariantEntry
    records: dict[str, dict[str, Any] | None]
    metadata: VariantMetadata
    scores: dict[str, dict[str, float]]  # the reference's field scores per labeled case
    case_ids: list[str]  # the cases it evaluated, in run order


def _case_inputs(cases: Sequence[Case]) -> list[CaseInput]:
    return [CaseInput(id=c.id, text=c.text, expected=c.expected, tags=list(c.tags)) for c in cases]


@dataclass(frozen=True, kw_only=True)
class _VariantJob:
    """Everything needed to evaluate one variant; picklable, so it can go to a worker."""

    variant: Variant
    dataset: Dataset
    cases: tuple[Case, ...]
    run_dir: Path
    reference_records: dict[str, dict[str, Any] | None] | None
    options: RunOptions
    reference_scores: dict[str, dict[str, float]] | None = None
    time_share_s: float | None = None


def _memory_reading(
    variant: Variant, opened: OpenedVariant, sampler: RssSampler, before: float
) -> MemoryReading:
    in_process = opened.memory_pid is None
    return MemoryReading(
        rss_before_load_mb=before if in_process else None,
        rss_after_load_mb=sampler.start_mb if in_process else None,
        rss_peak_mb=sampler.peak_mb,
        samples=sampler.samples,
        file_size_bytes=variant.file_size_bytes,
        reported_model_bytes=opened.reported_memory_bytes,
        reported_vram_bytes=opened.reported_vram_bytes,
        process="quantgate worker" if in_process else f"server pid {opened.memory_pid} and children",
    )


def _evaluate_variant(job: _VariantJob) -> _VariantRun:
    variant, dataset, options = job.variant, job.dataset, job.options
    store = RunStore(job.run_dir)
    before = rss_mb()
    concurrency = variant_concurrency(options, variant)
    progress = tqdm(total=len(job.cases), desc=variant.name, unit="case", disable=not options.progress)
    started = last_end = time.perf_counter()  # both reset when the first case starts

    def on_record(outcome: CaseOutcome) -> None:
        nonlocal last_end
        last_end = time.perf_counter()
        store.write_record(case_record(variant.name, outcome))
        progress.update(1)

    opening = open_variant(variant, dataset.schema, slots=concurrency)
    with store, progress, opening as opened, _sampler(opened) as sampler:
        judge, deadline = _judge_of(job)
        context = EvaluationContext(
            extraction=extraction_context(dataset, opened, options),
            scorer=CaseScorer(schema=dataset.schema),
            reference_records=job.reference_records,
            on_record=on_record,
            memory=lambda: _memory_reading(variant, opened, sampler, before),
            judge=judge,
            deadline=deadline,
        )
        round_size = options.round_size if options.sequential else None
        started = last_end = time.perf_counter()
        output = evaluation_graph.invoke(
            {"cases": _case_inputs(job.cases), "round_size": round_size},
            context=context,
            config={
                "max_concurrency": concurrency,
                "recursion_limit": rounds_limit(len(job.cases), round_size),
            },
        )
        metadata = variant_metadata(variant, runtime=opened.runtime)
    outcomes: list[CaseOutcome] = output["outcomes"]
    is_reference = job.reference_records is None
    wall_s = last_end - started if outcomes else None
    entry = variant_entry(
        variant,
        {
            **output["summary"],
            "concurrency": concurrency,
            "wall_s": wall_s,
            "throughput_tokens_per_s": throughput((o.latency.output_tokens for o in outcomes), wall_s),
            "sequential": _sequential_entry(judge),
        },
        is_reference=is_reference,
        quantization=variant.quantization or opened.quantization,
        cases=[case.id for case in job.cases],
        recorded=[o.case_id for o in outcomes],
        stopped=output.get("stopped"),
    )
    return _variant_run(job, outcomes, entry, metadata)


def _judge_of(job: _VariantJob) -> tuple[SequentialJudge | None, float | None]:
    """The sequential judge of a variant (None for a fixed sample) and its deadline, from now."""
    share = job.time_share_s
    deadline = None if share is None else time.perf_counter() + share
    if not job.options.sequential:
        return None, deadline
    return SequentialJudge(
        gates=job.options.gates, reference=job.reference_scores, deadline=deadline
    ), deadline


def _variant_run(
    job: _VariantJob, outcomes: list[CaseOutcome], entry: VariantEntry, metadata: VariantMetadata
) -> _VariantRun:
    # only the reference's records and scores are used (for agreement and pairing); the others'
    # would be held for nothing
    is_reference = job.reference_records is None
    records = {
        o.case_id: o.extraction.record if o.extraction.valid else None for o in outcomes if is_reference
    }
    scores = {
        o.case_id: {name: f.score for name, f in o.score.fields.fields.items()}
        for o in outcomes
        if is_reference and o.score.fields is not None
    }
    order = {case.id: i for i, case in enumerate(job.cases)}
    case_ids = sorted((o.case_id for o in outcomes), key=order.__getitem__)
    return _VariantRun(entry=entry, records=records, metadata=metadata, scores=scores, case_ids=case_ids)


def _sequential_entry(judge: SequentialJudge | None) -> SequentialEntry | None:
    if judge is None:
        return None
    return SequentialEntry(
        settled=judge.settled, paired_cases=judge.paired_cases, cases=judge.cases, stopped=judge.stopped
    )


def _sampler(opened: OpenedVariant) -> RssSampler:
    """This process's RSS, or the local server process tree that holds the model."""
    if opened.memory_pid is None:
        return RssSampler()
    return RssSampler(pid=opened.memory_pid, include_children=True)


def _evaluate_isolated(job: _VariantJob) -> _VariantRun:
    """Evaluate a variant in a fresh process, so its memory figures start from a clean slate.

    llama.cpp does not hand all memory back when a model is freed (about 200 MiB stays), so
    measuring variants one after another in one process would inflate the later ones. A
    worker that dies (a crash inside llama.cpp) makes the variant fail, not the run. A backend
    without `process_isolation` (a chat model object given from Python cannot cross processes)
    runs here instead.
    """
    if not capabilities(job.variant).process_isolation:
        return _evaluate_variant(job)
    name = job.variant.name
    return run_isolated(_evaluate_variant, job, name=f"quantgate-{name}", what=f"variant {name}")


def _with_deltas(summary: RunSummary, reference: str, run_dir: Path) -> None:
    """Each evaluated variant's paired accuracy delta against the reference, from the records."""
    records = latest_records(read_records(run_dir))
    ref = records.get(reference, {})
    for entry in summary.variants:
        own = records.get(entry.name)
        paired = paired_cases(ref, own) if own and entry.name != reference else []
        entry.field_accuracy_delta = accuracy_delta(paired)


def _options_info(options: RunOptions) -> RunOptionsInfo:
    sequential = options.sequential
    return RunOptionsInfo(
        limit=None if sequential else options.limit,
        concurrency=options.concurrency,
        max_repairs=options.max_repairs,
        method="sequential" if sequential else "bootstrap",
        round_size=options.round_size if sequential else None,
        max_cases=options.max_cases if sequential else None,
        budget_minutes=options.budget_s / 60 if sequential and options.budget_s is not None else None,
    )


def _copy_cases(dataset: Dataset, cases: Sequence[Case], store: RunStore) -> None:
    card = (
        f"# Cases of `{dataset.name}` evaluated in run {store.run_id}\n\n"
        f"A copy written by `quantgate run`: {len(cases)} of the {len(dataset.cases)} scored cases of "
        f"{dataset.path} (sha256 {dataset.sha256}), and the {len(dataset.examples)} few-shot "
        f"examples the run prompted with.\n\n{dataset.card or ''}"
    )
    write_dataset(
        store.directory / DATASET_DIR,
        schema=dataset.schema,
        cases=cases,
        examples=dataset.examples,
        card=card,
    )


def _evaluate_all(
    jobs: Sequence[_VariantJob],
    reference_name: str,
    summary: RunSummary,
    store: RunStore,
    baselines: BaselineScores,
) -> None:
    """Each variant in turn (the reference first, whose records serve the others' agreement)."""
    metadata = VariantsFile()
    reference: _VariantRun | None = None
    started = time.perf_counter()
    for left, job in zip(range(len(jobs), 0, -1), jobs, strict=True):
        variant = job.variant
        is_reference = variant.name == reference_name
        budget = job.options.budget_s
        share = None if budget is None else max(budget - (time.perf_counter() - started), 0.0) / left
        if reference is not None:  # the others run on the cases the reference ran, in its order
            ran = set(reference.case_ids)
            job = replace(
                job,
                cases=tuple(c for c in job.cases if c.id in ran),
                reference_records=reference.records,
                reference_scores=reference.scores,
            )
        try:
            result = _evaluate_isolated(replace(job, time_share_s=share))
        except BackendError as exc:
            print(f"quantgate: skipping variant {variant.name}: {exc}")
            cases = [case.id for case in job.cases]
            summary.variants.append(skipped_entry(variant, str(exc), is_reference=is_reference, cases=cases))
            metadata.variants.append(variant_metadata(variant, error=str(exc)))
        else:
            _say_cuts(result.entry)
            result.entry.baseline_accuracy = baseline_accuracy(scores=baselines, case_ids=result.case_ids)
            summary.variants.append(result.entry)
            metadata.variants.append(result.metadata)
            if is_reference:
                reference = result
        _with_deltas(summary, reference_name, store.directory)
        store.write_variants(metadata)
        store.write_summary(summary)


def _say_cuts(entry: VariantEntry) -> None:
    """Say on stderr how many case texts were cut to fit the variant's context window."""
    if entry.truncated_cases:
        print(
            f"quantgate: {entry.name}: {entry.truncated_cases} case text(s) did not fit the context "
            "window and were cut (the beginning and the end kept, the middle dropped; records.jsonl "
            "gives input_tokens_dropped per case)",
            file=sys.stderr,
        )


def _examples(dataset: Dataset, options: RunOptions) -> ChosenExamples:
    """The run's few-shot examples, with what was done said on stderr."""
    chosen = choose_examples(dataset, options.examples)
    for note in (chosen.message, chosen.warning and f"warning: {chosen.warning}"):
        if note:
            print(f"quantgate: {note}", file=sys.stderr)
    return chosen


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
    chosen = _examples(dataset, options)
    dataset = chosen.dataset
    cases = run_cases(dataset.cases, options)
    if not cases:
        raise ValueError(f"{dataset.path}: no case to evaluate")
    baselines = baseline_scores(
        golds={c.id: c.expected for c in cases}, tags={c.id: c.tags for c in cases}, schema=dataset.schema
    )
    store = RunStore.create(options.out)
    _copy_cases(dataset, cases, store)
    summary = new_summary(
        run_id=store.run_id,
        dataset=dataset_info(dataset, len(cases)),
        reference=reference_name,
        options=_options_info(options),
        examples=ExamplesInfo(source=chosen.source, ids=list(chosen.ids)),
        baselines=baselines_info(baselines),
    )
    jobs = [
        _VariantJob(variant=v, dataset=dataset, cases=tuple(cases), run_dir=store.directory,
                    reference_records=None, options=options)
        for v in variants
    ]  # fmt: skip
    try:
        _evaluate_all(jobs, reference_name, summary, store, baselines)
        token_fidelity_step(
            dataset=dataset,
            cases=cases[: options.token_fidelity_cases],
            variants=variants,
            reference_name=reference_name,
            entries=summary.variants,
            run_dir=store.directory,
            enabled=options.token_fidelity,
            max_repairs=options.max_repairs,
            progress=options.progress,
        )
        summary.status = "complete"
    except KeyboardInterrupt as interruption:  # Ctrl-C, or SIGTERM under signals.stop_on_signals
        summary.status = "interrupted"
        note_run_dir(interruption, store.directory)
        raise
    finally:
        store.write_summary(summary)
        store.close()
    return store.directory
