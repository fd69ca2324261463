"""`quantgate decide RUN_DIR`: judge a run against the gates and write decision.json/.md."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from quantgate._formatting import terminal_text
from quantgate.cli._common import add_cost_flags, add_gate_flags, cli_costs, cli_gates, report_decision
from quantgate.cli._exports import add_export_flags, check_export_flags, write_exports

if TYPE_CHECKING:
    from quantgate.cli._common import Commands


def _decide(args: argparse.Namespace) -> int:
    from quantgate.rundir._completeness import run_completeness
    from quantgate.rundir._decision import EXIT_STATUS
    from quantgate.suite._suite_records import is_suite_dir

    check_export_flags(args)  # a --junit path that cannot be written fails before deciding
    if is_suite_dir(Path(args.run_dir)):  # a suite's directory: every task, then the suite
        from quantgate.cli._suite import decide_suite_command

        return decide_suite_command(args)
    gates = cli_gates(args)
    prices, recommend_by = cli_costs(args)
    run_dir = Path(args.run_dir)
    completeness = run_completeness(run_dir)
    if not completeness.complete:
        severity = "warning" if args.allow_incomplete else "error"
        print(
            terminal_text(f"quantgate: {severity}: {run_dir}: {completeness.notice()}", lines=True),
            file=sys.stderr,
        )
        if not args.allow_incomplete:
            status = EXIT_STATUS["incomplete_run"]
            resume = f"go on with: quantgate run --resume {run_dir}; " if completeness.resumable else ""
            print(
                f"quantgate: not deciding on an incomplete run (exit status {status}); "
                f"{resume}--allow-incomplete decides on what it holds",
                file=sys.stderr,
            )
            return status
    _print_task_figures(run_dir)
    status = report_decision(run_dir, gates, prices=prices, recommend_by=recommend_by)
    write_exports(run_dir, args)
    return status


def _print_task_figures(run_dir: Path) -> None:
    """The run's task-kind figures per variant, as `quantgate run` prints them under its table
    (nothing for an extraction run)."""
    from evaluators.errors import QuantgateError
    from quantgate.render._summary_table import task_section
    from quantgate.rundir._store import read_summary

    try:
        summary = read_summary(run_dir)
    except QuantgateError:  # deciding says what is wrong with the run directory
        return
    lines = task_section(summary)[1:]  # no blank line before it here
    if lines:
        print(terminal_text("\n".join(lines), lines=True))


def add_parser(commands: Commands) -> None:
    """Add `quantgate decide`, with the gate flags."""
    decide = commands.add_parser(
        "decide",
        help="judge a run against the gates; write decision.json/.md; exit 0 if a quantized candidate "
        "passes, 4 to keep the reference, 3 if nothing passes, 5 if the run is incomplete",
    )
    decide.add_argument(
        "run_dir", metavar="RUN_DIR", help="a run directory, or a suite's (each task, then the suite)"
    )
    decide.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="decide on what an incomplete run holds (a run interrupted or killed, a variant lacking "
        "cases, a damaged records.jsonl); the decision says so. Without it such a run exits 5",
    )
    add_gate_flags(decide)
    add_cost_flags(decide)
    add_export_flags(decide)
    decide.set_defaults(handler=_decide)
