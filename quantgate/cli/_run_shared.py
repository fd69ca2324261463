"""What `quantgate run` of one dataset and of a suite share: the options of run's flags, and the
report written after a run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evaluators.errors import MissingExtraError, UsageError, require_extra

if TYPE_CHECKING:
    from quantgate.evaluate._options import RunOptions
    from quantgate.inputs._gates import Gates


def cli_run_options(args: argparse.Namespace, *, gates: Gates, default_budget: float | None) -> RunOptions:
    """The options of `run`'s flags (the sample, concurrency, repairs, output, token fidelity, cache).

    Args:
        args: The parsed flags of `run`.
        gates: The gates a sequential run judges after each round.
        default_budget: Minutes of a sequential run without `--budget` (None: no budget).

    Raises:
        UsageError: `--max-cases` or `--budget` with `--limit` or `--all`.
    """
    from quantgate.evaluate._cache import default_reference_cache
    from quantgate.evaluate._options import RunOptions

    sequential = args.limit is None and not args.all
    if not sequential and (args.max_cases is not None or args.budget is not None):
        raise UsageError(
            "--max-cases and --budget bound a sequential run; they do not go with --limit or --all"
        )
    budget = args.budget if args.budget is not None else default_budget
    return RunOptions(
        limit=args.limit,
        sequential=sequential,
        gates=gates,
        max_cases=args.max_cases,
        budget_s=budget * 60 if sequential and budget is not None else None,
        concurrency=args.concurrency,
        max_repairs=args.max_repairs,
        out=Path(args.out),
        progress=not args.json,
        token_fidelity=not args.no_token_fidelity,
        token_fidelity_cases=args.token_fidelity_cases,
        verify=not args.no_verify,
        latency_cases=args.latency_cases,
        noise_floor_cases=args.noise_floor_cases,
        examples=args.examples,
        reference_cache=None if args.no_cache else default_reference_cache(),
    )


def write_report_after_run(run_dir: Path, *, quiet: bool) -> None:
    """Write the HTML report (of a suite's directory: each task's and the suite's, with its task x
    variant grid); a failure here is reported and the run, already on disk, is kept. Without the
    `report` extra, one line says how to install it and write the report later."""
    try:
        require_extra("report", "the HTML report")
    except MissingExtraError as exc:
        print(f"quantgate: {exc}; then: quantgate report {run_dir}", file=sys.stderr)
        return
    from quantgate.analysis._report import write_report
    from quantgate.suite._suite_report import is_suite_dir, write_suite_report

    try:
        page = write_suite_report(run_dir) if is_suite_dir(run_dir) else write_report(run_dir)
    except Exception as exc:  # the run and its decision are written: never lose them to a chart bug
        print(
            f"quantgate: the report could not be written ({type(exc).__name__}: {exc}); the run and its "
            f"decision are kept in {run_dir}; retry with: quantgate report {run_dir}",
            file=sys.stderr,
        )
        return
    if not quiet:
        print(f"report: {page}")
