"""A run being written: its files, and the evaluation of its variants, reference first.

The reference is evaluated first: its records serve the others' agreement and pairing. The
other variants then go to the executor together (`quantgate.evaluate.scheduler._executor`): one after
another on this machine, or side by side on a Ray cluster. summary.json and variants.json are
written again after each variant ends.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evaluators.baselines import BaselineScores, baseline_accuracy
from evaluators.betting import DEFAULT_TRUNCATION
from evaluators.comparison import accuracy_delta
from evaluators.flips import summarize_flips
from graphs.evaluation import CaseOutcome
from quantgate.capacity._shape_record import memory_model_check
from quantgate.evaluate._options import RunOptions
from quantgate.evaluate.scheduler._executor import Evaluated, VariantExecutor
from quantgate.evaluate.scheduler._variant import VariantJob, VariantRun, variant_run
from quantgate.evaluate.scheduler._verification import latency_sample, verification_missing
from quantgate.inputs._dataset import Case, Dataset
from quantgate.inputs._gates import Gates, comparison_options
from quantgate.inputs._variants import Variant
from quantgate.rundir._build import skipped_entry, variant_metadata
from quantgate.rundir._pairing import paired_cases, paired_latency
from quantgate.rundir._store import RunStore, latest_records, read_records
from quantgate.rundir._summary import (
    Placement,
    RunSummary,
    VariantEntry,
    VariantMetadata,
    VariantsFile,
)

__all__ = ["RunSession", "evaluate_all", "record_run", "record_skipped"]


@dataclass(kw_only=True)
class RunSession:
    """A run being written by this process: a new one, or one resumed from its directory.

    Attributes:
        done: Variants whose entry is complete (a resumed run's): not run again.
        prior: Outcomes of the cases recorded before, per variant (a resumed run's, read back
            and rescored): the reference's, and those of each variant not done.
    """

    store: RunStore
    summary: RunSummary
    metadata: VariantsFile
    dataset: Dataset
    cases: list[Case]
    variants: list[Variant]
    reference: str
    options: RunOptions
    baselines: BaselineScores
    done: frozenset[str] = frozenset()
    prior: dict[str, tuple[CaseOutcome, ...]] = field(default_factory=dict)
    unenforced_said: set[tuple[str, ...]] = field(default_factory=set)
    """The lists of unenforced schema keywords already warned of (each is said once per run)."""
    kept_fidelity: dict[str, dict[str, Any]] = field(default_factory=dict)
    """A complete run going on: each variant's token-fidelity keys (`VariantEntry.FIDELITY_KEYS`) as
    measured before (on the run's first cases, which did not change), put back instead of measured
    again."""

    def place(self, entry: VariantEntry, metadata: VariantMetadata) -> None:
        """Put a variant's summary entry and variants.json line in their place, in run order (the
        entry with the memory model's prediction beside its measured peak)."""
        order = {v.name: i for i, v in enumerate(self.variants)}
        entries = [e for e in self.summary.variants if e.name != entry.name]
        self.summary.variants = sorted([*entries, entry], key=lambda e: order.get(e.name, len(order)))
        self.place_metadata(metadata)
        line = self.metadata.by_name().get(entry.name)
        if line is not None:
            entry.memory_model_check = memory_model_check(line.memory_model, line.runtime, entry.memory_mb)

    def place_metadata(self, metadata: VariantMetadata) -> None:
        """Put a variant's variants.json line in its place (keeping the memory-model record read
        when the run started, which the line built after evaluating it does not carry)."""
        before = next((m for m in self.metadata.variants if m.name == metadata.name), None)
        if metadata.memory_model is None and before is not None and before.memory_model is not None:
            metadata = metadata.model_copy(update={"memory_model": before.memory_model})
        self.metadata.variants = [metadata if m.name == metadata.name else m for m in self.metadata.variants]


def _job(session: RunSession, variant: Variant, reference: VariantRun | None) -> VariantJob:
    """A variant's job: the reference on the run's cases, the others on those the reference ran,
    in its order, with the outcomes of its cases recorded before (a resumed run's)."""
    cases = session.cases
    if reference is not None and variant.name != session.reference:
        ran = set(reference.case_ids)
        cases = [c for c in cases if c.id in ran]
    ids = {c.id for c in cases}
    return VariantJob(
        variant=variant,
        dataset=session.dataset,
        cases=tuple(cases),
        run_dir=session.store.directory,
        reference_records=None if reference is None else reference.records,
        reference_scores=None if reference is None else reference.scores,
        options=session.options,
        prior=tuple(o for o in session.prior.get(variant.name, ()) if o.case_id in ids),
    )


def _share(session: RunSession, started: float, ways: int) -> float | None:
    """A sequential run's time budget left, split `ways`; None without a budget."""
    budget = session.options.budget_s
    return None if budget is None else max(budget - (time.perf_counter() - started), 0.0) / ways


def _done_reference(session: RunSession) -> VariantRun | None:
    """The reference as a resumed run completed it, None when it is still to evaluate."""
    entry = session.summary.entry(session.reference)
    if session.reference not in session.done or entry is None:
        return None
    variant = next(v for v in session.variants if v.name == session.reference)
    job = _job(session, variant, None)
    return variant_run(job, list(job.prior), entry, session.metadata.by_name()[variant.name])


def _ended(session: RunSession, executor: VariantExecutor) -> Iterator[Evaluated]:
    """Each variant still to evaluate as it ends: the reference, then the others (together when
    the executor runs jobs side by side, each with the whole budget left; else one at a time,
    each with its share)."""
    started = time.perf_counter()
    todo = [v for v in session.variants if v.name not in session.done]
    reference = _done_reference(session)
    if todo and todo[0].name == session.reference:
        job = replace(_job(session, todo.pop(0), None), time_share_s=_share(session, started, len(todo) + 1))
        for evaluated in executor.evaluate([job]):
            reference = evaluated.run
            yield evaluated
    if executor.parallel:
        share = _share(session, started, 1)
        yield from executor.evaluate([replace(_job(session, v, reference), time_share_s=share) for v in todo])
        return
    for left, variant in zip(range(len(todo), 0, -1), todo, strict=True):
        job = replace(_job(session, variant, reference), time_share_s=_share(session, started, left))
        yield from executor.evaluate([job])


def evaluate_all(session: RunSession, executor: VariantExecutor) -> None:
    """Evaluate the variants not done yet (the reference first), each as a whole, writing
    summary.json and variants.json again after each one (the executor's own way: a Ray cluster)."""
    for evaluated in _ended(session, executor):
        if evaluated.run is None:
            print(f"quantgate: skipping variant {evaluated.job.variant.name}: {evaluated.error}")
            record_skipped(session, evaluated.job, str(evaluated.error), placement=evaluated.placement)
        else:
            record_run(session, evaluated.run, placement=evaluated.placement, whole=True)


def record_skipped(session: RunSession, job: VariantJob, error: str, *, placement: Placement) -> None:
    """Write the entry of a variant that could not be evaluated (its records stay), and the run's files."""
    variant = job.variant
    session.place(
        skipped_entry(
            variant, error, is_reference=variant.name == session.reference, cases=[c.id for c in job.cases]
        ),
        variant_metadata(variant, error=error).model_copy(update={"placement": placement}),
    )
    _write(session)


def record_run(session: RunSession, result: VariantRun, *, placement: Placement, whole: bool = False) -> None:
    """Write an evaluated variant's entry (with its trivial baseline), its line of variants.json,
    and every variant's paired delta; say what its evaluation cut or could not enforce (`whole`:
    it was evaluated whole, not in rounds, so it verified nothing)."""
    _say_cuts(result.entry)
    _say_unenforced(session, result.metadata)
    variant = next((v for v in session.variants if v.name == result.entry.name), None)
    if variant is not None and result.entry.name != session.reference:
        missing = verification_missing(variant, session.options, whole=placement.executor if whole else None)
        result.entry.verification_missing = missing
    result.entry.baseline_accuracy = baseline_accuracy(scores=session.baselines, case_ids=result.case_ids)
    session.place(result.entry, result.metadata.model_copy(update={"placement": placement}))
    _write(session)


def _write(session: RunSession) -> None:
    sample = latency_sample(session.cases, session.options)
    order = {case.id: i for i, case in enumerate(session.cases)}
    session.summary.latency_sample = sorted(sample, key=order.__getitem__)
    _with_deltas(session.summary, session.reference, session.store.directory, order, sample=sample)
    session.store.write_variants(session.metadata)
    session.store.write_summary(session.summary)


def _with_deltas(
    summary: RunSummary,
    reference: str,
    run_dir: Path,
    order: dict[str, int],
    *,
    sample: frozenset[str] | None,
) -> None:
    """Each evaluated variant's paired accuracy delta, flips and latency against the reference, from the
    records (the flips' intervals as the decision computes them: the run's gates, method and truncation,
    over the cases in the run's `order`; the latency over the run's latency `sample`, None: every case)."""
    records = latest_records(read_records(run_dir))
    ref = records.get(reference, {})
    options = summary.options
    gates = (options.gates if options else None) or Gates()
    method = options.interval_method if options else "betting"
    truncation = options.truncation if options else DEFAULT_TRUNCATION
    judged = comparison_options(gates, method, truncation=truncation)
    for entry in summary.variants:
        own = records.get(entry.name)
        paired = paired_cases(ref, own) if own and entry.name != reference else []
        paired.sort(key=lambda c: order.get(c.case_id, len(order)))
        entry.field_accuracy_delta = accuracy_delta(paired)
        entry.latency_against_reference = (
            paired_latency(ref, own, sample=sample) if own and entry.name != reference else None
        )
        entry.flips = summarize_flips(paired, options=judged) if paired else None


def _say_unenforced(session: RunSession, metadata: VariantMetadata) -> None:
    """Warn on stderr of the schema keywords the variant's constrained decoding cannot enforce
    (its backend's `runtime.unenforced_schema_keywords`), once per run for the same list."""
    keywords = tuple((metadata.runtime or {}).get("unenforced_schema_keywords") or ())
    if not keywords or keywords in session.unenforced_said:
        return
    session.unenforced_said.add(keywords)
    listed = "".join(f"\n  {keyword}" for keyword in keywords)
    print(
        f"quantgate: warning: the grammar of variant {metadata.name} does not enforce {len(keywords)} "
        f"schema keyword(s): an answer can break them and still end normally, which lowers its "
        f"format validity (kept in variants.json as runtime.unenforced_schema_keywords):{listed}",
        file=sys.stderr,
    )


def _say_cuts(entry: VariantEntry) -> None:
    """Say on stderr how many case texts were cut to fit the variant's context window."""
    if entry.truncated_cases:
        print(
            f"quantgate: {entry.name}: {entry.truncated_cases} case text(s) did not fit the context "
            "window and were cut (the beginning and the end kept, the middle dropped; records.jsonl "
            "gives input_tokens_dropped per case)",
            file=sys.stderr,
        )
