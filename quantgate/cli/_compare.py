"""`quantgate compare RUN_A RUN_B`: what changed between two runs (B - A), with the statistics."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from quantgate._formatting import terminal_text
from quantgate.cli._common import add_gate_flags, cli_gates
from quantgate.evaluate._predictions import dump_json

if TYPE_CHECKING:
    from quantgate.cli._common import Commands


def _compare(args: argparse.Namespace) -> int:
    from quantgate.analysis._compare import compare_runs, render_comparison
    from quantgate.inputs._gates import comparison_options
    from quantgate.rundir._completeness import Completeness

    result = compare_runs(args.run_a, args.run_b, options=comparison_options(cli_gates(args)))
    if args.json:  # the text has the notices at its top; JSON on stdout stays JSON
        for side, run_dir in (("a", args.run_a), ("b", args.run_b)):
            completeness = Completeness(problems=tuple(result["incomplete"][side]))
            if not completeness.complete:
                print(
                    terminal_text(f"quantgate: warning: {run_dir}: {completeness.notice()}", lines=True),
                    file=sys.stderr,
                )
    print(dump_json(result) if args.json else terminal_text(render_comparison(result), lines=True))
    return 0


def add_parser(commands: Commands) -> None:
    """Add `quantgate compare`, with the gate flags."""
    compare = commands.add_parser(
        "compare", help="what changed between two runs (B - A), with the statistics"
    )
    compare.add_argument("run_a", metavar="RUN_A")
    compare.add_argument("run_b", metavar="RUN_B")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    add_gate_flags(compare)
    compare.set_defaults(handler=_compare)
