"""The `quantgate` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from quantgate.dataset import bundled_datasets, check_dataset, load_dataset, resolve_dataset
from quantgate.scoring import dump_json, read_predictions, render_report, score_predictions


def _datasets_check(args: argparse.Namespace) -> int:
    failed = False
    for name in args.dirs:
        try:
            path = resolve_dataset(name)
        except FileNotFoundError as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            failed = True
            continue
        dataset, problems = check_dataset(path)
        for problem in problems:
            print(f"{problem.severity}: {path}/{problem}", file=sys.stderr)
        if dataset is None:
            errors = sum(p.severity == "error" for p in problems)
            print(f"FAIL {path}: {errors} error(s)")
            failed = True
        else:
            labeled = sum(c.expected is not None for c in dataset.cases)
            counts = f"{len(dataset.cases)} cases ({labeled} labeled), {len(dataset.examples)} examples"
            print(f"ok   {path}: {counts}")
    return 1 if failed else 0


def _datasets_list(args: argparse.Namespace) -> int:
    for name in bundled_datasets():
        dataset = load_dataset(name)
        tags = sorted({t for c in dataset.cases for t in c.tags})
        print(f"{name:<20} {len(dataset.cases):>4} cases   tags: {', '.join(tags)}")
    return 0


def _score(args: argparse.Namespace) -> int:
    dataset = load_dataset(args.dataset, skip_invalid_cases=args.skip_invalid_cases)
    for warning in dataset.warnings:
        print(f"warning: {dataset.path}/{warning}", file=sys.stderr)
    predictions, problems = read_predictions(Path(args.predictions))
    for problem in problems:
        print(problem, file=sys.stderr)
    report = score_predictions(dataset, predictions)
    print(dump_json(report.as_dict()) if args.json else render_report(report))
    return 1 if any(p.severity == "error" for p in problems) else 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="quantgate",
        description="Is a quantized LLM good enough to replace its reference for structured extraction?",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    datasets = commands.add_parser("datasets", help="check and list datasets")
    datasets_cmds = datasets.add_subparsers(dest="datasets_command", required=True, metavar="ACTION")
    check = datasets_cmds.add_parser("check", help="validate dataset directories; exit 1 on any error")
    check.add_argument("dirs", nargs="+", metavar="DIR", help="dataset directory or bundled name")
    check.set_defaults(handler=_datasets_check)
    listing = datasets_cmds.add_parser("list", help="list the bundled datasets")
    listing.set_defaults(handler=_datasets_list)

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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `quantgate` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except (FileNotFoundError, ValueError) as exc:
        print(f"quantgate: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("quantgate: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
