"""`quantgate run --suite`: several datasets (tasks) with the same variants, into one directory.

The suite's directory holds suite.json (the plan, written before any task runs) and one ordinary
run directory per task, `tasks/<task>/`, each written by `run_evaluation` as a run of one dataset
would be; `quantgate.suite._suite_decision` decides them together. A suite stopped part way (Ctrl-C, an
error) keeps the tasks it finished, each a complete run; `resume_suite` goes on with the rest.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from evaluators.errors import QuantgateError, UsageError
from quantgate._formatting import terminal_text
from quantgate.evaluate._evaluation_run import order_variants, resume_evaluation, run_evaluation
from quantgate.evaluate._options import RunOptions
from quantgate.evaluate._signals import note_run_dir
from quantgate.evaluate.scheduler._executor import LocalExecutor, VariantExecutor
from quantgate.inputs._dataset import Dataset, load_dataset
from quantgate.inputs._variants import VariantSet
from quantgate.rundir._completeness import run_completeness
from quantgate.rundir._store import new_run_id
from quantgate.suite._suite_file import PlannedTask, Suite
from quantgate.suite._suite_records import (
    TASKS_DIR,
    SuiteRun,
    SuiteRunSettings,
    SuiteTaskEntry,
    read_suite,
    write_suite,
)

__all__ = ["resume_suite", "run_suite", "task_options"]


def _entry(planned: PlannedTask, base: RunOptions) -> SuiteTaskEntry:
    """A task as suite.json records it: its own sample settings if it gives any, else the run's."""
    task = planned.task
    own = task.limit is not None or task.all or task.max_cases is not None or task.budget is not None
    sequential = base.sequential
    return SuiteTaskEntry(
        name=task.name,
        dataset=str(planned.dataset.path.absolute()),
        kind=planned.dataset.task.kind,
        gates=planned.gates,
        gates_file=None if planned.gates_file is None else str(planned.gates_file),
        limit=task.limit if own else (None if sequential else base.limit),
        all=task.all if own else (not sequential and base.limit is None),
        max_cases=task.max_cases if own else (base.max_cases if sequential else None),
        budget=task.budget if own else (base.budget_s / 60 if sequential and base.budget_s else None),
        examples=task.examples if task.examples is not None else base.examples,
    )


def task_options(
    entry: SuiteTaskEntry, settings: SuiteRunSettings, suite_dir: Path, *, progress: bool
) -> RunOptions:
    """The options of a task's run: its entry's sample, gates and examples, the suite's settings."""
    sequential = entry.limit is None and not entry.all
    return RunOptions(
        limit=entry.limit,
        sequential=sequential,
        gates=entry.gates,
        max_cases=entry.max_cases,
        budget_s=entry.budget * 60 if entry.budget is not None else None,
        concurrency=settings.concurrency,
        max_repairs=settings.max_repairs,
        out=suite_dir / TASKS_DIR,
        progress=progress,
        token_fidelity=settings.token_fidelity,
        token_fidelity_cases=settings.token_fidelity_cases,
        examples=entry.examples,
        reference_cache=Path(settings.reference_cache) if settings.reference_cache else None,
        run_name=entry.name,
    )


def run_suite(
    suite: Suite,
    variant_set: VariantSet,
    *,
    options: RunOptions,
    reference: str | None = None,
    skip_invalid_cases: bool = False,
    executor: VariantExecutor | None = None,
) -> Path:
    """Run every task of the suite with the same variants, in the suite's order.

    Args:
        suite: The suite, its datasets and gates loaded (`quantgate.suite._suite_file.load_suite`).
        variant_set: The variants, the same for every task.
        options: The run's options: its `out`, settings and progress for every task, its sample
            (`limit`, sequential, `max_cases`, `budget_s`) and `examples` for a task without its own.
        reference: The reference variant's name (default: the file's, else the first).
        skip_invalid_cases: Recorded, so that a resumed suite loads a task's dataset alike.
        executor: Where variants are evaluated (default: here, one after another).

    Returns:
        The suite's directory, `<out>/<run-id>`, with suite.json and tasks/<task>/ per task.
    """
    ordered, reference_name = order_variants(variant_set, reference)
    suite_dir = options.out / new_run_id()
    (suite_dir / TASKS_DIR).mkdir(parents=True)
    cache = options.reference_cache
    plan = SuiteRun(
        run_id=suite_dir.name,
        suite_file=str(suite.path),
        reference=reference_name,
        variants=[v.name for v in ordered],
        settings=SuiteRunSettings(
            concurrency=options.concurrency,
            max_repairs=options.max_repairs,
            token_fidelity=options.token_fidelity,
            token_fidelity_cases=options.token_fidelity_cases,
            reference_cache=None if cache is None else str(cache),
            skip_invalid_cases=skip_invalid_cases,
        ),
        tasks=[_entry(planned, options) for planned in suite.tasks],
    )
    write_suite(suite_dir, plan)
    datasets = {planned.task.name: planned.dataset for planned in suite.tasks}
    return _run_tasks(suite_dir, plan, variant_set, datasets, progress=options.progress, executor=executor)


def resume_suite(
    suite_dir: str | Path,
    variant_set: VariantSet,
    *,
    progress: bool = True,
    executor: VariantExecutor | None = None,
) -> Path:
    """Go on with a suite stopped part way: its complete tasks are kept, an interrupted task goes
    on from its records (`resume_evaluation`), a task not started runs as planned in suite.json.

    Raises:
        UsageError: The variants are not the suite's.
        ResumeError: A task's run cannot be resumed (the message names its directory).
    """
    suite_dir = Path(suite_dir)
    plan = read_suite(suite_dir)
    names = sorted(v.name for v in variant_set.variants)
    if names != sorted(plan.variants):
        raise UsageError(
            f"{suite_dir}: the suite ran the variants {', '.join(plan.variants)}, not {', '.join(names)}"
        )
    return _run_tasks(suite_dir, plan, variant_set, {}, progress=progress, executor=executor)


def _run_tasks(
    suite_dir: Path,
    plan: SuiteRun,
    variant_set: VariantSet,
    datasets: Mapping[str, Dataset],
    *,
    progress: bool,
    executor: VariantExecutor | None,
) -> Path:
    """Run (or go on with) each task not complete yet; a stop names the tasks done and the one it cut."""
    executor = executor or LocalExecutor()
    done: list[str] = []
    for entry in plan.tasks:
        task_dir = suite_dir / TASKS_DIR / entry.name
        try:
            if not task_dir.exists():
                dataset = datasets.get(entry.name) or load_dataset(
                    entry.dataset, skip_invalid_cases=plan.settings.skip_invalid_cases
                )
                options = task_options(entry, plan.settings, suite_dir, progress=progress)
                run_evaluation(
                    dataset, variant_set, reference=plan.reference, options=options, executor=executor
                )
            elif not run_completeness(task_dir).complete:
                resume_evaluation(task_dir, variant_set=variant_set, progress=progress, executor=executor)
        except KeyboardInterrupt as exc:
            note_run_dir(exc, suite_dir)
            _say_stopped(suite_dir, done, entry.name)
            raise
        except QuantgateError:
            _say_stopped(suite_dir, done, entry.name)
            raise
        done.append(entry.name)
    return suite_dir


def _say_stopped(suite_dir: Path, done: list[str], current: str) -> None:
    finished = f"tasks finished and kept: {', '.join(done)}" if done else "no task finished"
    print(
        terminal_text(
            f"quantgate: the suite stopped in task {current!r} ({finished}); the suite so far is in "
            f"{suite_dir} (go on with: quantgate run --resume {suite_dir})"
        ),
        file=sys.stderr,
    )
