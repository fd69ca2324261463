"""`quantgate score`: score a predictions file against a dataset's gold."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from quantgate._formatting import terminal_text
from quantgate.cli._common import cli_dataset
from quantgate.evaluate._predictions import dump_json, read_predictions, render_report, score_predictions

if TYPE_CHECKING:
    from quantgate.cli._common import Commands


def _score(args: argparse.Namespace) -> int:
    dataset = cli_dataset(args.dataset, args.skip_invalid_cases)
    predictions, problems = read_predictions(Path(args.predictions))
    for problem in problems:
        print(terminal_text(problem), file=sys.stderr)
    report = score_predictions(dataset, predictions)
    print(dump_json(report.as_dict()) if args.json else terminal_text(render_report(report), lines=True))
    return 1 if any(p.severity == "error" for p in problems) else 0


def add_parser(commands: Commands) -> None:
    """Add `quantgate score`."""
    score = commands.add_parser("score", help="score a predictions file against a dataset's gold")
    score.add_argument("--dataset", required=True, help="dataset directory or bundled name")
    score.add_argument(
        "--predictions",
        required=True,
        metavar="FILE.jsonl",
        help='lines of {"id": ..., "output": {...}} or {"id": ..., "raw": "..."}',
    )
    score.add_argument("--json", action="store_true", help="print a machine-readable summary")
    score.add_argument(
        "--skip-invalid-cases",
        action="store_true",
        help="leave out dataset lines with errors (reported) instead of refusing the dataset",
    )
    score.set_defaults(handler=_score)
