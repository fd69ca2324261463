"""`quantgate run`: every variant over a dataset, reference first, into `runs/<run-id>/`.

Each variant in turn is evaluated on the cases (`quantgate.evaluate.variant`: in a worker
process, records written as each case finishes). summary.json and variants.json are written
when the run starts (variants.json lists every variant's spec from the start) and again after
every variant, so an interrupted run leaves a readable directory, and `resume_evaluation`
(`quantgate run --resume`) goes on from it (`quantgate.evaluate.resume`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from evaluators.baselines import BaselineScores, baseline_accuracy, baseline_scores
from evaluators.comparison import accuracy_delta
from graphs.evaluation import CaseOutcome
from quantgate.backends import BackendError
from quantgate.evaluate.fidelity_step import token_fidelity_step
from quantgate.evaluate.options import RunOptions, run_cases, select_cases
from quantgate.evaluate.rescore import prior_outcomes
from quantgate.evaluate.resume import read_back
from quantgate.evaluate.signals import note_run_dir, stop_on_signals
from quantgate.evaluate.variant import VariantJob, VariantRun, evaluate_isolated, variant_run
from quantgate.inputs.dataset import Case, Dataset, write_dataset
from quantgate.inputs.examples import ChosenExamples, choose_examples
from quantgate.inputs.variants import Variant, VariantSet
from quantgate.rundir.build import (
    baselines_info,
    dataset_info,
    new_summary,
    planned_metadata,
    skipped_entry,
    variant_metadata,
)
from quantgate.rundir.files import DATASET_DIR
from quantgate.rundir.jsonfile import RunWriteError
from quantgate.rundir.pairing import paired_cases
from quantgate.rundir.store import RunStore, latest_records, read_records
from quantgate.rundir.summary import (
    ExamplesInfo,
    RunOptionsInfo,
    RunSummary,
    VariantEntry,
    VariantMetadata,
    VariantsFile,
)

__all__ = ["RunOptions", "order_variants", "resume_evaluation", "run_evaluation", "select_cases"]


def order_variants(variant_set: VariantSet, reference: str | None) -> tuple[list[Variant], str]:
    """Variants with the reference first; the reference defaults to the file's, else the first."""
    name = reference or variant_set.reference or variant_set.variants[0].name
    names = [v.name for v in variant_set.variants]
    if name not in names:
        raise ValueError(f"reference {name!r} is not one of the variants ({', '.join(names)})")
    ordered = sorted(variant_set.variants, key=lambda v: v.name != name)
    return ordered, name


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
        gates=options.gates,
        token_fidelity=options.token_fidelity,
        token_fidelity_cases=options.token_fidelity_cases,
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


@dataclass(kw_only=True)
class _Session:
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

    def place(self, entry: VariantEntry, metadata: VariantMetadata) -> None:
        """Put a variant's summary entry and variants.json line in their place, in run order."""
        order = {v.name: i for i, v in enumerate(self.variants)}
        entries = [e for e in self.summary.variants if e.name != entry.name]
        self.summary.variants = sorted([*entries, entry], key=lambda e: order.get(e.name, len(order)))
        self.metadata.variants = [metadata if m.name == metadata.name else m for m in self.metadata.variants]


def _job(session: _Session, variant: Variant, reference: VariantRun | None) -> VariantJob:
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


def _evaluate_all(session: _Session) -> None:
    """Each variant in turn (the reference first, whose records serve the others' agreement)."""
    summary, options = session.summary, session.options
    reference: VariantRun | None = None
    started = time.perf_counter()
    left = len([v for v in session.variants if v.name not in session.done])
    for variant in session.variants:
        is_reference = variant.name == session.reference
        job = _job(session, variant, reference)
        if variant.name in session.done:
            entry = summary.entry(variant.name)
            if is_reference and entry is not None:
                metadata = session.metadata.by_name()[variant.name]
                reference = variant_run(job, list(job.prior), entry, metadata)
            continue
        budget = options.budget_s
        share = None if budget is None else max(budget - (time.perf_counter() - started), 0.0) / left
        left -= 1
        try:
            result = evaluate_isolated(replace(job, time_share_s=share))
        except BackendError as exc:
            print(f"quantgate: skipping variant {variant.name}: {exc}")
            cases = [case.id for case in job.cases]
            session.place(
                skipped_entry(variant, str(exc), is_reference=is_reference, cases=cases),
                variant_metadata(variant, error=str(exc)),
            )
        else:
            _say_cuts(result.entry)
            result.entry.baseline_accuracy = baseline_accuracy(
                scores=session.baselines, case_ids=result.case_ids
            )
            session.place(result.entry, result.metadata)
            if is_reference:
                reference = result
        _with_deltas(summary, session.reference, session.store.directory)
        session.store.write_variants(session.metadata)
        session.store.write_summary(summary)


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


def _execute(session: _Session) -> Path:
    """Evaluate the variants not done yet, then measure token fidelity; the summary says how it ended.

    SIGINT and SIGTERM stop it as Ctrl-C does, from Python as from the command line
    (`stop_on_signals`): no further case starts, and the summary says `interrupted`.

    Raises:
        KeyboardInterrupt: Ctrl-C or SIGTERM; the summary says `interrupted`.
        RuntimeError: A run file could not be written (a full disk): the message says which,
            and how to go on once the cause is fixed; what was written stays.
    """
    with stop_on_signals():
        return _execute_here(session)


def _execute_here(session: _Session) -> Path:
    store, summary, options = session.store, session.summary, session.options
    try:
        store.write_variants(session.metadata)
        store.write_summary(summary)
        _evaluate_all(session)
        token_fidelity_step(
            dataset=session.dataset,
            cases=session.cases[: options.token_fidelity_cases],
            variants=session.variants,
            reference_name=session.reference,
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
    except RunWriteError as exc:
        summary.status = "interrupted"
        raise RuntimeError(
            f"{exc}. The run stopped there; once the cause is fixed (free some disk space), go on with: "
            f"quantgate run --resume {store.directory}"
        ) from exc
    finally:
        _write_summary_last(store, summary, failing=sys.exc_info()[1] is not None)
    return store.directory


def _write_summary_last(store: RunStore, summary: RunSummary, *, failing: bool) -> None:
    """Write the summary as the run ends and release the run; when the run is already `failing`,
    a summary that cannot be written either is said, not raised over the first failure."""
    try:
        store.write_summary(summary)
    except RunWriteError as exc:
        if not failing:
            raise
        print(f"quantgate: {exc} (summary.json keeps its previous version)", file=sys.stderr)
    finally:
        store.close()


def _baselines(dataset: Dataset, cases: Sequence[Case]) -> BaselineScores:
    return baseline_scores(
        golds={c.id: c.expected for c in cases}, tags={c.id: c.tags for c in cases}, schema=dataset.schema
    )


def run_evaluation(
    dataset: Dataset,
    variant_set: VariantSet,
    *,
    reference: str | None = None,
    options: RunOptions | None = None,
) -> Path:
    """Evaluate every variant on the dataset and write a new run directory.

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
    baselines = _baselines(dataset, cases)
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
    session = _Session(
        store=store,
        summary=summary,
        metadata=VariantsFile(variants=[planned_metadata(v) for v in variants]),
        dataset=dataset,
        cases=cases,
        variants=variants,
        reference=reference_name,
        options=options,
        baselines=baselines,
    )
    return _execute(session)


def resume_evaluation(
    run_dir: str | Path,
    *,
    dataset: Dataset | None = None,
    variant_set: VariantSet | None = None,
    budget_s: float | None = None,
    progress: bool = True,
) -> Path:
    """Go on with an interrupted run in its own directory, as it was started, until it is complete.

    Variants the run completed are not run again; the others go on from their records, each
    (variant, case) recorded once (`quantgate.evaluate.resume`). Token fidelity runs at the end.

    Args:
        run_dir: The run directory.
        dataset: The dataset, given again: checked to be the run's.
        variant_set: The variants, given again: checked to be the run's, and used (a model
            file may have moved; chat models given from Python must be given again).
        budget_s: Seconds of case evaluation for the rest of the run (None: a sequential run's
            budget, shared as when it started, for the variants not yet done).
        progress: Show progress bars.

    Returns:
        The run directory.

    Raises:
        ResumeError: The run cannot be resumed (complete, damaged, still running, other inputs).
    """
    back = read_back(run_dir, dataset=dataset, variant_set=variant_set, budget_s=budget_s, progress=progress)
    cases = list(back.dataset.cases)
    try:  # before anything is written: a record that scores otherwise now stops the resume
        prior = prior_outcomes(
            back.records,
            dataset=back.dataset,
            cases=cases,
            reference=back.reference,
            needed=[v.name for v in back.variants if v.name not in back.done],
        )
    except BaseException:
        back.store.close()
        raise
    session = _Session(
        store=back.store,
        summary=back.summary,
        metadata=back.metadata,
        dataset=back.dataset,
        cases=cases,
        variants=back.variants,
        reference=back.reference,
        options=back.options,
        baselines=_baselines(back.dataset, cases),
        done=back.done,
        prior=prior,
    )
    return _execute(session)
