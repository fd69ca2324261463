"""A server variant's cases split between Ray tasks (its `shards`), and its result put back together.

A variant served by a server (Ollama) can spread its cases over several nodes, each with its own
server: its cases not yet recorded are dealt in turn between `shards` tasks, each declaring the
variant's resources. When every task has ended, the driver makes the variant's one result from
all its cases' outcomes, as one evaluation would have:
- accuracy, validity, latency and agreement: summarized again over every outcome, by the
  evaluation graph's own evaluator code (`graphs.evaluation.outcomes_summary`);
- memory: the figures of the shard whose process peaked highest (each node holds the model);
- throughput: output tokens over the tasks' summed wall time, i.e. per task, so that it compares
  with a variant evaluated in one task; `wall_s` is that sum.
A shard that fails (its task died after its retries, or its backend failed) fails the variant, as
a single task would; the records of every shard are kept, and `--resume` runs only the rest.
Sequential runs (`--sequential`) judge after each round of cases, so their variants are not split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from evaluators.latency import throughput
from evaluators.memory import MemorySummary
from graphs.evaluation import CaseOutcome, outcomes_summary
from quantgate.backends import capabilities
from quantgate.evaluate.scheduler._executor import Evaluated
from quantgate.evaluate.scheduler._variant import VariantJob, VariantRun, variant_run
from quantgate.rundir._build import variant_entry
from quantgate.rundir._summary import Placement, ShardPlacement

__all__ = ["ShardEnded", "merged", "shard_jobs", "why_not_split"]

_MEMORY_FIGURES = tuple(MemorySummary.model_fields)


@dataclass(frozen=True, kw_only=True)
class ShardEnded:
    """One shard's task as it ended.

    Attributes:
        job: The shard's job (its `prior`: outcomes its earlier, dead tasks sent back).
        new: The outcomes its last task sent back (those its throughput counts).
        run: Its result as one task saw it; None when it failed.
        error: Why it failed.
        placement: Where it ran and which cases it recorded.
    """

    job: VariantJob
    new: tuple[CaseOutcome, ...]
    run: VariantRun | None
    error: str | None
    placement: ShardPlacement


def why_not_split(job: VariantJob) -> str | None:
    """Why a variant that asks for shards is evaluated in one task (None: it is split, or did
    not ask)."""
    variant = job.variant
    if variant.shards == 1:
        return None
    if capabilities(variant).memory != "server":
        return (
            f"shards = {variant.shards} is for variants served by a server, and its model loads in its task"
        )
    if job.options.sequential:
        return "a sequential run judges after each round of cases, so its variants are not split"
    return None


def shard_jobs(job: VariantJob) -> list[VariantJob]:
    """The job's cases not yet recorded, dealt in turn between `variant.shards` jobs (fewer
    when there are fewer such cases; one, the job itself, when it is not split)."""
    if job.variant.shards == 1 or why_not_split(job) is not None:
        return [job]
    done = {o.case_id for o in job.prior}
    pending = [case for case in job.cases if case.id not in done]
    count = min(job.variant.shards, len(pending))
    if count <= 1:
        return [job]
    return [replace(job, cases=tuple(pending[i::count]), prior=()) for i in range(count)]


def merged(job: VariantJob, shards: Sequence[ShardEnded], resources: dict[str, float]) -> Evaluated:
    """The variant's result from its shards' (`job`: the variant's whole job)."""
    placement = Placement(
        executor="ray",
        attempts=sum(s.placement.attempts for s in shards),
        resources=resources,
        started_at=min((s.placement.started_at for s in shards if s.placement.started_at), default=None),
        ended_at=max((s.placement.ended_at for s in shards if s.placement.ended_at), default=None),
        shards=[s.placement for s in shards],
    )
    errors = [f"shard {i + 1} of {len(shards)}: {s.error}" for i, s in enumerate(shards) if s.run is None]
    if errors:
        return Evaluated(job=job, run=None, error="; ".join(errors), placement=placement)
    return Evaluated(job=job, run=_merged_run(job, shards), error=None, placement=placement)


def _merged_run(job: VariantJob, shards: Sequence[ShardEnded]) -> VariantRun:
    runs = [s.run for s in shards if s.run is not None]
    outcomes = [*job.prior, *(o for s in shards for o in (*s.job.prior, *s.new))]
    walls = [r.entry.wall_s for r in runs if r.entry.wall_s is not None]
    wall = sum(walls) if walls else None
    tokens = (o.latency.output_tokens for s in shards for o in s.new)
    largest = max(runs, key=lambda r: r.entry.memory_mb if r.entry.memory_mb is not None else -1.0)
    resumed = len(job.prior) + sum(len(s.job.prior) for s in shards)
    memory = MemorySummary.model_validate(largest.entry.model_dump(include=set(_MEMORY_FIGURES)))
    summary = outcomes_summary(
        outcomes,
        against_reference=job.reference_records is not None,
        memory=memory,
        task=job.dataset.task,
        case_tasks=job.dataset.case_tasks,
    )
    figures = {
        "concurrency": runs[0].entry.concurrency,
        "wall_s": wall,
        "throughput_tokens_per_s": throughput(tokens, wall),
        "resumed_cases": resumed or None,
    }
    entry = variant_entry(
        job.variant,
        summary,
        figures,
        is_reference=job.reference_records is None,
        quantization=runs[0].entry.quantization,
        cases=[case.id for case in job.cases],
        recorded=[o.case_id for o in outcomes],
    )
    return variant_run(job, outcomes, entry, runs[0].metadata)
