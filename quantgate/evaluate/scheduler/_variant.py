"""One variant's evaluation: load it, run the evaluation graph over its cases, free it.

For a variant: its model is opened (memory read before and after), the evaluation graph runs
over its cases with an RSS sampler going, each case's record is written as it finishes, and
the model is freed. A variant runs in a fresh worker process when its backend allows it
(`evaluate_isolated`), so its memory figures start from a clean slate.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from evaluators.latency import throughput
from evaluators.memory import MemoryReading
from graphs.evaluation import CaseOutcome, EvaluationContext, VariantSummary, rounds_limit
from graphs.evaluation import graph as evaluation_graph
from quantgate.backends import OpenedVariant, backend_module, capabilities, open_variant
from quantgate.backends._extraction_context import case_input
from quantgate.evaluate._memory_sampler import RssSampler, rss_mb
from quantgate.evaluate._options import RunOptions, extraction_context, variant_concurrency
from quantgate.evaluate._signals import stop_asked
from quantgate.evaluate.scheduler._stopping_rule import SequentialJudge
from quantgate.evaluate.scheduler._warm_up import first_token_s
from quantgate.evaluate.scheduler._worker import run_isolated
from quantgate.inputs._dataset import Case, Dataset
from quantgate.inputs._variants import Variant
from quantgate.rundir._build import case_record, variant_entry, variant_metadata
from quantgate.rundir._store import RunStore
from quantgate.rundir._summary import SequentialEntry, VariantEntry, VariantMetadata

__all__ = [
    "VariantJob",
    "VariantRun",
    "evaluate_isolated",
    "evaluate_variant",
    "memory_reading",
    "rss_sampler",
    "variant_run",
    "with_backend_module",
]


@dataclass(kw_only=True)
class VariantRun:
    """What the run keeps of an evaluated variant.

    Attributes:
        entry: Its summary entry.
        records: Its normalized records by case id (the reference's only: for agreement).
        metadata: Its line of variants.json.
        scores: Its field scores per labeled case (the reference's only: for pairing).
        case_ids: The cases it evaluated, in run order.
    """

    entry: VariantEntry
    records: dict[str, dict[str, Any] | None]
    metadata: VariantMetadata
    scores: dict[str, dict[str, float]]
    case_ids: list[str]


@dataclass(frozen=True, kw_only=True)
class VariantJob:
    """Everything needed to evaluate one variant; picklable, so it can go to a worker.

    Attributes:
        prior: Outcomes of its cases already recorded (a resumed run's, read back and
            rescored): those cases are not run again.
        backend_module: The module that registers its backend, imported before the variant
            is opened in another process (`with_backend_module`).
    """

    variant: Variant
    dataset: Dataset
    cases: tuple[Case, ...]
    run_dir: Path
    reference_records: dict[str, dict[str, Any] | None] | None
    options: RunOptions
    reference_scores: dict[str, dict[str, float]] | None = None
    time_share_s: float | None = None
    prior: tuple[CaseOutcome, ...] = ()
    backend_module: str | None = None


def memory_reading(
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


def _progress(job: VariantJob) -> tqdm[Any]:
    done = len(job.prior)
    return tqdm(
        total=len(job.cases),
        initial=done,
        desc=f"{job.variant.name} ({done} read back)" if done else job.variant.name,
        unit="case",
        disable=not job.options.progress,
    )


def evaluate_variant(job: VariantJob, on_outcome: Callable[[CaseOutcome], None]) -> VariantRun:
    """Evaluate a variant here, handing each case's outcome to `on_outcome` as it finishes.

    The caller records the outcomes: `evaluate_isolated` writes them to the run directory
    from its worker, a Ray task (`quantgate.cluster`) sends them back to the driver.
    """
    variant, dataset, options = job.variant, job.dataset, job.options
    if job.backend_module is not None:  # registers the backend in this process, if not yet
        importlib.import_module(job.backend_module)
    before = rss_mb()
    concurrency = variant_concurrency(options, variant)
    progress = _progress(job)
    started = last_end = time.perf_counter()  # both reset when the first case starts

    def on_record(outcome: CaseOutcome) -> None:
        nonlocal last_end
        last_end = time.perf_counter()
        on_outcome(outcome)
        progress.update(1)

    opening = open_variant(variant, dataset.schema, slots=concurrency)
    with progress, opening as opened, rss_sampler(opened) as sampler:
        judge, deadline = _judge_of(job)
        context = EvaluationContext(
            extraction=extraction_context(dataset, opened, options),
            scorer=dataset.scorer(),
            reference_records=job.reference_records,
            on_record=on_record,
            memory=lambda: memory_reading(variant, opened, sampler, before),
            judge=judge,
            deadline=deadline,
            stop=stop_asked,
        )
        first_token_s(context.extraction)  # warmed up as in a round's worker: the same outputs
        round_size = options.round_size if options.sequential else None
        started = last_end = time.perf_counter()
        output = evaluation_graph.invoke(
            {
                "cases": [case_input(c) for c in job.cases],
                "round_size": round_size,
                "outcomes": list(job.prior),
            },
            context=context,
            config={
                "max_concurrency": concurrency,
                "recursion_limit": rounds_limit(len(job.cases), round_size),
            },
        )
        metadata = variant_metadata(variant, runtime=opened.runtime)
    quantization = variant.quantization or opened.quantization
    return _finished(
        job, output, metadata=metadata, quantization=quantization, concurrency=concurrency, judge=judge,
        wall_s=last_end - started,
    )  # fmt: skip


def _finished(
    job: VariantJob,
    output: dict[str, Any],
    *,
    metadata: VariantMetadata,
    quantization: str | None,
    concurrency: int,
    judge: SequentialJudge | None,
    wall_s: float,
) -> VariantRun:
    """The variant's result from the graph's output; throughput counts the cases run here only
    (`wall_s`: from the first case's start to the last one's end), not those read back."""
    outcomes: list[CaseOutcome] = output["outcomes"]
    read_back = {o.case_id for o in job.prior}
    new = [o for o in outcomes if o.case_id not in read_back]
    wall = wall_s if new else None
    figures = {
        "concurrency": concurrency,
        "wall_s": wall,
        "throughput_tokens_per_s": throughput((o.latency.output_tokens for o in new), wall),
        "sequential": _sequential_entry(judge),
        "resumed_cases": len(job.prior) or None,
    }
    entry = _entry(
        job, output["summary"], figures, outcomes, quantization=quantization, stopped=output.get("stopped")
    )
    return variant_run(job, outcomes, entry, metadata)


def _entry(
    job: VariantJob,
    summary: VariantSummary,
    figures: dict[str, Any],
    outcomes: list[CaseOutcome],
    *,
    quantization: str | None,
    stopped: str | None,
) -> VariantEntry:
    """The variant's summary entry from the graph's summary, the run's figures and the cases it has
    outcomes of."""
    return variant_entry(
        job.variant,
        summary,
        figures,
        is_reference=job.reference_records is None,
        quantization=quantization,
        cases=[case.id for case in job.cases],
        recorded=[o.case_id for o in outcomes],
        stopped=stopped,
    )


def _judge_of(job: VariantJob) -> tuple[SequentialJudge | None, float | None]:
    """The sequential judge of a variant (None for a fixed sample) and its deadline, from now."""
    share = job.time_share_s
    deadline = None if share is None else time.perf_counter() + share
    if not job.options.sequential:
        return None, deadline
    return SequentialJudge(
        gates=job.options.gates,
        reference=job.reference_scores,
        truncation=job.options.truncation,
        deadline=deadline,
    ), deadline


def variant_run(
    job: VariantJob, outcomes: list[CaseOutcome], entry: VariantEntry, metadata: VariantMetadata
) -> VariantRun:
    """What the run keeps of a variant evaluated on `outcomes` (a resumed run: read back)."""
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
    return VariantRun(entry=entry, records=records, metadata=metadata, scores=scores, case_ids=case_ids)


def _sequential_entry(judge: SequentialJudge | None) -> SequentialEntry | None:
    if judge is None:
        return None
    return SequentialEntry(
        settled=judge.settled, paired_cases=judge.paired_cases, cases=judge.cases, stopped=judge.stopped
    )


def rss_sampler(opened: OpenedVariant) -> RssSampler:
    """This process's RSS, or the local server process tree that holds the model."""
    if opened.memory_pid is None:
        return RssSampler()
    return RssSampler(pid=opened.memory_pid, include_children=True)


def _evaluate_into_run_dir(job: VariantJob) -> VariantRun:
    """Evaluate a variant, appending each case's record to the run directory as it finishes."""
    name = job.variant.name
    with RunStore(job.run_dir) as store:
        return evaluate_variant(job, lambda outcome: store.write_record(case_record(name, outcome)))


def with_backend_module(job: VariantJob) -> VariantJob:
    """The job naming the module that registers its variant's backend, for another process."""
    return replace(job, backend_module=backend_module(job.variant.backend))


def evaluate_isolated(job: VariantJob) -> VariantRun:
    """Evaluate a variant in a fresh process, so its memory figures start from a clean slate.

    llama.cpp does not hand all memory back when a model is freed (about 200 MiB stays), so
    measuring variants one after another in one process would inflate the later ones. A
    worker that dies (a crash inside llama.cpp) makes the variant fail, not the run. A backend
    without `process_isolation` (a chat model object given from Python cannot cross processes)
    runs here instead.
    """
    if not capabilities(job.variant).process_isolation:
        return _evaluate_into_run_dir(job)
    name = job.variant.name
    return run_isolated(
        _evaluate_into_run_dir, with_backend_module(job), name=f"quantgate-{name}", what=f"variant {name}"
    )
