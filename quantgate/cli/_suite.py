"""`quantgate run --suite`, `run --resume SUITE_DIR` and `decide SUITE_DIR`: several datasets with
the same variants in one run directory, judged per task and together (docs/suites.md)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from evaluators.errors import UsageError
from quantgate._formatting import terminal_text
from quantgate.cli._common import (
    check_output_dir,
    check_variant_files,
    cli_costs,
    cli_executor,
    cli_variants,
    report_decision,
)
from quantgate.cli._exports import write_exports
from quantgate.cli._run_shared import cli_run_options, write_report_after_run
from quantgate.inputs._gates import GATE_KEYS

if TYPE_CHECKING:
    from quantgate.inputs._gates import Gates
    from quantgate.inputs._prices import Prices
    from quantgate.rundir._decision import Decision
    from quantgate.suite._suite_records import SuiteDecision

_NOT_WITH_SUITE = ("dataset", "load", "embeddings")
"""Flags a suite run refuses: the datasets are the suite's; the load test and the embeddings
measure one dataset's texts (run them on a task's directory)."""


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    return {key: getattr(args, key) for key in GATE_KEYS}


def run_suite_command(args: argparse.Namespace) -> int:
    """`run --suite FILE`: check every dataset and gates file, run each task, decide the suite."""
    from quantgate.inputs._gates import Gates
    from quantgate.suite._suite_file import load_suite
    from quantgate.suite._suite_run import run_suite

    given = [name for name in _NOT_WITH_SUITE if getattr(args, name)]
    if given:
        flags = ", ".join("--" + name for name in given)
        raise UsageError(f"--suite names each task's dataset; {flags} cannot be given with it")
    if args.recommend == "cost":
        raise UsageError(
            "--suite ranks the variants passing every task by footprint; --recommend cost is not "
            "available for a suite (each task's decision still gets --costs' table)"
        )
    suite = load_suite(
        args.suite,
        gates_file=args.gates,
        gate_overrides=_overrides(args),
        skip_invalid_cases=args.skip_invalid_cases,
    )  # every dataset and gates file, before any model loads
    prices, _ = cli_costs(args)
    check_output_dir(Path(args.out))
    options = cli_run_options(args, gates=Gates(), default_budget=None)  # each task has its own gates
    variant_set = cli_variants(args.variants)
    with cli_executor(args, progress=not args.json) as executor:
        suite_dir = run_suite(
            suite,
            variant_set,
            options=options,
            reference=args.reference,
            skip_invalid_cases=args.skip_invalid_cases,
            executor=executor,
        )
    return conclude_suite(suite_dir, args, prices=prices)


def resume_suite_command(args: argparse.Namespace) -> int:
    """`run --resume SUITE_DIR`: go on with each task not complete, then decide the suite."""
    from quantgate.evaluate._resume import planned_variants
    from quantgate.suite._suite_records import TASKS_DIR, read_suite
    from quantgate.suite._suite_run import resume_suite

    suite_dir = Path(args.resume)
    if args.dataset or args.budget is not None:
        raise UsageError(
            f"{suite_dir} is a suite: its tasks name their datasets and budgets; --dataset and --budget "
            "cannot be given when resuming it (resume a task's directory, tasks/<task>, with --budget)"
        )
    prices, _ = cli_costs(args)
    plan = read_suite(suite_dir)
    started = [
        suite_dir / TASKS_DIR / e.name for e in plan.tasks if (suite_dir / TASKS_DIR / e.name).is_dir()
    ]
    if args.variants:
        variant_set = cli_variants(args.variants)
    elif started:
        variant_set = planned_variants(started[0], finished=True)  # the first task may be complete
        check_variant_files(variant_set)
    else:
        raise UsageError(f"{suite_dir}: no task has started; give the variants again with --variants")
    with cli_executor(args, progress=not args.json) as executor:
        resume_suite(suite_dir, variant_set, progress=not args.json, executor=executor)
    return conclude_suite(suite_dir, args, prices=prices)


def _task_decider(
    args: argparse.Namespace, prices: Prices | None, *, quiet: bool
) -> Callable[[str, Path, Gates], Decision]:
    """Decide one task's run as `quantgate decide` does (its lines printed under the task's name)."""
    from quantgate.decide._recommendation import load_decision

    def decide_task(name: str, task_dir: Path, gates: Gates) -> Decision:
        if not quiet:
            print(terminal_text(f"task {name}:"))
        report_decision(task_dir, gates, quiet=quiet, prices=prices)
        return load_decision(task_dir)

    return decide_task


def conclude_suite(suite_dir: Path, args: argparse.Namespace, *, prices: Prices | None) -> int:
    """Print each task's summary table, then decide the suite (each task's verdicts, the grid);
    write each task's report unless --no-report; return the exit status."""
    from quantgate.render._summary_table import render_summary
    from quantgate.rundir._store import read_summary
    from quantgate.suite._suite_decision import decide_suite
    from quantgate.suite._suite_records import TASKS_DIR, read_suite

    if not args.json:
        for entry in read_suite(suite_dir).tasks:
            summary = read_summary(suite_dir / TASKS_DIR / entry.name)
            print(terminal_text(f"task {entry.name} ({entry.kind}, {summary.dataset.name}):"))
            print(terminal_text(render_summary(summary), lines=True))
    decision = decide_suite(
        suite_dir, prices=prices, decide_task=_task_decider(args, prices, quiet=args.json)
    )
    status = _print_suite_decision(suite_dir, decision, quiet=args.json)
    if not args.no_report:
        write_report_after_run(suite_dir, quiet=args.json)
    write_exports(suite_dir, args, quiet=args.json)  # each task's decision: JUnit, MLflow
    return status


def _print_suite_decision(suite_dir: Path, decision: SuiteDecision, *, quiet: bool) -> int:
    from quantgate.rundir._decision import EXIT_STATUS
    from quantgate.suite._suite_grid import render_grid, suite_decision_line
    from quantgate.suite._suite_records import SUITE_DECISION_MD

    if quiet:
        print(decision.model_dump_json(indent=2))
    else:
        print(terminal_text(render_grid(decision), lines=True))
        print(
            terminal_text(
                f"suite decision: {suite_decision_line(decision)} (exit status {decision.exit_status})"
            )
        )
        print(terminal_text(f"suite decision record: {suite_dir / SUITE_DECISION_MD}"))
    if decision.incomplete_tasks:
        print(
            terminal_text(
                f"quantgate: warning: {suite_dir}: tasks not complete: {', '.join(decision.incomplete_tasks)}"
            ),
            file=sys.stderr,
        )
        return EXIT_STATUS["incomplete_run"]
    return decision.exit_status


def decide_suite_command(args: argparse.Namespace) -> int:
    """`decide SUITE_DIR`: judge each task's run again, then the suite; refuse incomplete tasks
    unless --allow-incomplete."""
    from quantgate.rundir._decision import EXIT_STATUS
    from quantgate.suite._suite_decision import decide_suite, incomplete_tasks

    suite_dir = Path(args.run_dir)
    prices, _ = cli_costs(args)
    if args.recommend == "cost":
        raise UsageError(
            "a suite ranks the variants passing every task by footprint; --recommend cost is "
            "not available for a suite"
        )
    missing = incomplete_tasks(suite_dir)
    if missing and not args.allow_incomplete:
        status = EXIT_STATUS["incomplete_run"]
        print(
            terminal_text(
                f"quantgate: error: {suite_dir}: tasks not complete: {', '.join(missing)}; not deciding "
                f"(exit status {status}); go on with: quantgate run --resume {suite_dir}; "
                "--allow-incomplete decides on what it holds"
            ),
            file=sys.stderr,
        )
        return status
    decision = decide_suite(
        suite_dir,
        gates_file=args.gates,
        gate_overrides=_overrides(args),
        prices=prices,
        decide_task=_task_decider(args, prices, quiet=False),
    )
    status = _print_suite_decision(suite_dir, decision, quiet=False)
    write_exports(suite_dir, args)  # each task's decision: JUnit, MLflow
    return status
