"""`quantgate decide RUN_DIR`: judge a run against the gates and write decision.json/.md."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from quantgate.cli.common import add_gate_flags, cli_gates, report_decision

if TYPE_CHECKING:
    from quantgate.cli.common import Commands


def _decide(args: argparse.Namespace) -> int:
    gates = cli_gates(args)
    return report_decision(Path(args.run_dir), gates)


def add_parser(commands: Commands) -> None:
    """Add `quantgate decide`, with the gate flags."""
    decide = commands.add_parser(
        "decide",
        help="judge a run against the gates; write decision.json/.md; exit 0 if a quantized candidate "
        "passes, 4 to keep the reference, 3 if nothing passes",
    )
    decide.add_argument("run_dir", metavar="RUN_DIR")
    add_gate_flags(decide)
    decide.set_defaults(handler=_decide)
