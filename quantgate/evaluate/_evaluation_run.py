"""`quantgate run`: every variant over a dataset, reference first, into `runs/<run-id>/`.

Each variant is evaluated on the cases (`quantgate.evaluate._session`: the reference first,
then the others through an executor, by default one after another in worker processes here;
records written as each case finishes). summary.json and variants.json are written
when the run starts (variants.json lists every variant's spec from the start) and again after
every variant, so an interrupted run leaves a readable directory, and `resume_evaluation`
(`quantgate run --resume`) goes on from it (`quantgate.evaluate._resume`).
"""

from __future__ import annotations

import functools
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from evaluators.baselines import BaselineScores, baseline_scores
from evaluators.errors import QuantgateError, UsageError
from quantgate._formatting import terminal_text
from quantgate.capacity._shape_reading import memory_model_entry
from quantgate.evaluate._calibration_holdout import without_calibration_cases
from quantgate.evaluate._label_confidence_step import add_gold_probability_shifts
from quantgate.evaluate._noise_floor_kld import measure_noise_floor_kld
from quantgate.evaluate._options import RunOptions, run_cases, select_cases
from quantgate.evaluate._recorded_options import recorded_options
from quantgate.evaluate._rescore import prior_outcomes
from quantgate.evaluate._resume import read_back
from quantgate.evaluate._session import RunSession, evaluate_all
from quantgate.evaluate._signals import before_fast_exit, note_run_dir, stop_on_signals
from quantgate.evaluate.scheduler._executor import LocalExecutor, VariantExecutor
from quantgate.evaluate.scheduler._rounds import evaluate_in_rounds
from quantgate.evaluate.token_fidelity._run_step import token_fidelity_step
from quantgate.inputs._dataset import Case, Dataset, data_file_hashes, write_dataset
from quantgate.inputs._examples import ChosenExamples, choose_examples
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._build import (
    baselines_info,
    dataset_info,
    new_summary,
    planned_metadata,
)
from quantgate.rundir._files import DATASET_DIR
from quantgate.rundir._jsonfile import RunWriteError
from quantgate.rundir._store import RunStore
from quantgate.rundir._summary import ExamplesInfo, RunSummary, VariantsFile

__all__ = [
    "RunOptions",
    "RunStoppedError",
    "order_variants",
    "resume_evaluation",
    "run_evaluation",
    "select_cases",
]


class RunStoppedError(QuantgateError, RuntimeError):
    """A run that could not start or go on: a file could not be written (a full disk, ...); the
    message names it and says what to do."""


def order_variants(variant_set: VariantSet, reference: str | None) -> tuple[list[Variant], str]:
    """Variants with the reference first; the reference defaults to the file's, else the first."""
    name = reference or variant_set.reference or variant_set.variants[0].name
    names = [v.name for v in variant_set.variants]
    if name not in names:
        raise UsageError(f"reference {name!r} is not one of the variants ({', '.join(names)})")
    ordered = sorted(variant_set.variants, key=lambda v: v.name != name)
    return ordered, name


def _copy_cases(dataset: Dataset, cases: Sequence[Case], store: RunStore) -> dict[str, str]:
    """Write the run's copy of its dataset; return the sha256 of each of its data files."""
    card = (
        f"# Cases of `{dataset.name}` evaluated in run {store.run_id}\n\n"
        f"A copy written by `quantgate run`: {len(cases)} of the {len(dataset.cases)} scored cases of "
        f"{dataset.path} (sha256 {dataset.sha256}), and the {len(dataset.examples)} few-shot "
        f"examples the run prompted with.\n\n{dataset.card or ''}"
    )
    copy = write_dataset(
        store.directory / DATASET_DIR,
        schema=dataset.schema,
        cases=cases,
        examples=dataset.examples,
        card=card,
        task=dataset.task,
    )
    return data_file_hashes(copy)


def _start(out: Path, begin: Callable[[RunStore], RunSession], name: str | None = None) -> RunSession:
    """Make the run directory and write what a run starts with (`begin`: its copy of the dataset;
    then variants.json and summary.json). Whatever stops the start (a full disk, a signal, a
    bug) removes the directory: no half-made run, which `--resume` would refuse, is left.

    Raises:
        RunStoppedError: A file could not be written (a full disk): the message names it.
    """
    try:
        store = RunStore.create(out, name)
    except OSError as exc:
        raise RunStoppedError(_not_started(exc, out)) from exc
    with before_fast_exit(functools.partial(_remove, store)):
        try:
            session = begin(store)
            store.write_variants(session.metadata)
            store.write_summary(session.summary)
        except BaseException as exc:
            _remove(store)
            if isinstance(exc, OSError | RunWriteError):
                raise RunStoppedError(_not_started(exc, store.directory)) from exc
            raise
    return session


def _remove(store: RunStore) -> None:
    """Release a run that did not start, and remove its directory."""
    store.close()
    shutil.rmtree(store.directory, ignore_errors=True)


def _not_started(exc: OSError | RunWriteError, directory: Path) -> str:
    """The one line saying which file could not be written as the run started, and what to do."""
    if isinstance(exc, RunWriteError):
        path, reason = exc.path, exc.reason
    else:
        path, reason = exc.filename or directory, exc.strerror or str(exc)
    return (
        f"cannot write {path}: {reason}; the run did not start (nothing of it is kept): once the cause "
        "is fixed (free some disk space), start it again"
    )


def _examples(dataset: Dataset, options: RunOptions) -> ChosenExamples:
    """The run's few-shot examples, with what was done said on stderr."""
    chosen = choose_examples(dataset, options.examples)
    for note in (chosen.message, chosen.warning and f"warning: {chosen.warning}"):
        if note:
            print(f"quantgate: {terminal_text(note)}", file=sys.stderr)  # case ids, as given
    return chosen


def _held_out(dataset: Dataset, variants: Sequence[Variant]) -> Dataset:
    """The dataset without the calibrated variants' calibration cases, with what was done on stderr."""
    held_out = without_calibration_cases(dataset, variants)
    if held_out.note:
        print(f"quantgate: {terminal_text(held_out.note)}", file=sys.stderr)
    return held_out.dataset


def _execute(session: RunSession, executor: VariantExecutor) -> Path:
    """Evaluate the variants not done yet, then measure token fidelity; the summary says how it ended.

    SIGINT and SIGTERM stop it as Ctrl-C does, from Python as from the command line
    (`stop_on_signals`): no further case starts, and the summary says `interrupted`.

    Raises:
        KeyboardInterrupt: Ctrl-C or SIGTERM; the summary says `interrupted`.
        RunStoppedError: A run file could not be written (a full disk): the message says which,
            and how to go on once the cause is fixed; what was written stays.
    """
    with stop_on_signals(), before_fast_exit(functools.partial(_write_interrupted, session)):
        return _execute_here(session, executor)


def _write_interrupted(session: RunSession) -> None:
    """A second signal's last words: the summary as the run stands, `interrupted` unless it ended."""
    summary = session.summary
    if summary.status == "running":
        summary = summary.model_copy(update={"status": "interrupted"})
    session.store.write_summary(summary)


def _execute_here(session: RunSession, executor: VariantExecutor) -> Path:
    store, summary = session.store, session.summary
    try:
        store.write_variants(session.metadata)
        store.write_summary(summary)
        if executor.in_rounds(session.variants, session.options):
            evaluate_in_rounds(session, executor.worker, executor.warm_capacity)
        else:
            evaluate_all(session, executor)
            if session.options.noise_floor_cases:
                summary.noise_floor_missing = "not measured: the variants ran as whole tasks (no warm worker)"
        add_gold_probability_shifts(session)
        _token_fidelity(session, executor)
        measure_noise_floor_kld(session)
        summary.status = "complete"
    except KeyboardInterrupt as interruption:  # Ctrl-C, or SIGTERM under signals.stop_on_signals
        summary.status = "interrupted"
        note_run_dir(interruption, store.directory)
        raise
    except RunWriteError as exc:
        summary.status = "interrupted"
        raise RunStoppedError(
            f"{exc}. The run stopped there; once the cause is fixed (free some disk space), go on with: "
            f"quantgate run --resume {store.directory}"
        ) from exc
    finally:
        _write_summary_last(store, summary, failing=sys.exc_info()[1] is not None)
    return store.directory


def _token_fidelity(session: RunSession, executor: VariantExecutor) -> None:
    """Measure token fidelity after the variants, or put back what a complete run going on measured."""
    options, summary = session.options, session.summary
    if session.kept_fidelity:
        for entry in summary.variants:
            for key, value in session.kept_fidelity.get(entry.name, {}).items():
                setattr(entry, key, value)
        return
    token_fidelity_step(
        dataset=session.dataset,
        cases=session.cases[: options.token_fidelity_cases],
        variants=session.variants,
        reference_name=session.reference,
        entries=summary.variants,
        run_dir=session.store.directory,
        enabled=options.token_fidelity,
        max_repairs=options.max_repairs,
        progress=options.progress,
        executor=executor,
    )


def _write_summary_last(store: RunStore, summary: RunSummary, *, failing: bool) -> None:
    """Write the summary as the run ends and release the run; when the run is already `failing`,
    a summary that cannot be written either is said, not raised over the first failure."""
    try:
        try:
            store.write_summary(summary)
        except KeyboardInterrupt:  # a signal cut the write short: write it whole, then stop
            store.write_summary(summary)  # a second signal exits with it written (_write_interrupted)
            raise
    except RunWriteError as exc:
        if not failing:
            raise
        print(f"quantgate: {exc} (summary.json keeps its previous version)", file=sys.stderr)
    finally:
        store.close()


def _baselines(dataset: Dataset, cases: Sequence[Case]) -> BaselineScores:
    return baseline_scores(
        golds={c.id: c.expected for c in cases},
        tags={c.id: c.tags for c in cases},
        schema=dataset.schema,
        task=dataset.task,
        case_tasks=dataset.case_tasks,
    )


def run_evaluation(
    dataset: Dataset,
    variant_set: VariantSet,
    *,
    reference: str | None = None,
    options: RunOptions | None = None,
    executor: VariantExecutor | None = None,
) -> Path:
    """Evaluate every variant on the dataset and write a new run directory.

    `executor` says where variants are evaluated: by default one after another in worker
    processes here (`LocalExecutor`); `quantgate.cluster.RayExecutor` fans them out over Ray.

    Returns:
        The run directory (`<out>/<run-id>`), complete with records, variants and summary.
    """
    options = options or RunOptions()
    variants, reference_name = order_variants(variant_set, reference)
    chosen = _examples(dataset, options)
    dataset = _held_out(chosen.dataset, variants)
    cases = run_cases(dataset.cases, options)
    if not cases:
        raise UsageError(f"{dataset.path}: no case to evaluate")
    baselines = _baselines(dataset, cases)

    def begin(store: RunStore) -> RunSession:
        copied = _copy_cases(dataset, cases, store)
        summary = new_summary(
            run_id=store.run_id,
            dataset=dataset_info(dataset, len(cases), copy_sha256=copied),
            reference=reference_name,
            options=recorded_options(options),
            examples=ExamplesInfo(source=chosen.source, ids=list(chosen.ids)),
            baselines=baselines_info(baselines),
        )
        return RunSession(
            store=store,
            summary=summary,
            metadata=VariantsFile(
                variants=[
                    planned_metadata(v).model_copy(update={"memory_model": memory_model_entry(v)})
                    for v in variants
                ]
            ),
            dataset=dataset,
            cases=cases,
            variants=variants,
            reference=reference_name,
            options=options,
            baselines=baselines,
        )

    session = _start(options.out, begin, options.run_name)
    return _execute(session, executor or LocalExecutor())


def resume_evaluation(
    run_dir: str | Path,
    *,
    dataset: Dataset | None = None,
    variant_set: VariantSet | None = None,
    budget_s: float | None = None,
    progress: bool = True,
    executor: VariantExecutor | None = None,
) -> Path:
    """Go on with an interrupted run in its own directory, as it was started, until it is complete;
    or with a complete sequential run whose budget left candidates open, for `budget_s` more.

    Variants the run completed are not run again; the others go on from their records, each
    (variant, case) recorded once (`quantgate.evaluate._resume`). Token fidelity runs at the end.

    Args:
        run_dir: The run directory.
        dataset: The dataset, given again: checked to be the run's.
        variant_set: The variants, given again: checked to be the run's, and used (a model
            file may have moved; chat models given from Python must be given again).
        budget_s: Seconds of case evaluation for the rest of the run (None: what an interrupted
            sequential run had left of its budget; a complete run whose budget left candidates
            open needs it, and goes on with them on the same sequence).
        progress: Show progress bars.
        executor: Where the variants left are evaluated (default: here, one after another).

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
    session = RunSession(
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
        kept_fidelity=back.kept_fidelity,
    )
    return _execute(session, executor or LocalExecutor())
