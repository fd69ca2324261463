"""`quantgate report RUN_DIR`: write the run's self-contained HTML report and print its path."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evaluators.errors import require_extra
from quantgate._formatting import terminal_text
from quantgate.cli._common import non_negative_int

if TYPE_CHECKING:
    from quantgate.cli._common import Commands


def _report(args: argparse.Namespace) -> int:
    require_extra("report", "quantgate report")
    from quantgate.analysis._report import write_report
    from quantgate.rundir._completeness import run_completeness
    from quantgate.suite._suite_report import is_suite_dir, write_suite_report

    run_dir = Path(args.run_dir)
    if is_suite_dir(run_dir):
        print(write_suite_report(run_dir, max_failures=args.max_failures))
        return 0
    completeness = run_completeness(run_dir)
    if not completeness.complete:
        print(
            terminal_text(f"quantgate: warning: {run_dir}: {completeness.notice()}", lines=True),
            file=sys.stderr,
        )
    print(write_report(run_dir, max_failures=args.max_failures))
    return 0


def add_parser(commands: Commands) -> None:
    """Add `quantgate report`."""
    report = commands.add_parser(
        "report",
        help="write RUN_DIR/report/report.html (self-contained) and its PNG charts; print its path "
        "(of a suite's directory: each task's report and the task x variant grid)",
    )
    report.add_argument(
        "run_dir", metavar="RUN_DIR", help="a run directory, or a suite's (each task's report, then its own)"
    )
    report.add_argument(
        "--max-failures",
        type=non_negative_int,
        default=1000,
        metavar="N",
        help="at most N case x variant entries in the failure browser (default %(default)s)",
    )
    report.set_defaults(handler=_report)
