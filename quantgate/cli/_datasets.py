"""`quantgate datasets check DIR...` and `quantgate datasets list`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quantgate._formatting import terminal_text
from quantgate.inputs._dataset import (
    SCHEMA_FILE,
    bundled_datasets,
    check_dataset,
    load_dataset,
    resolve_dataset,
)
from quantgate.inputs._task_file import TASK_FILE

if TYPE_CHECKING:
    from quantgate.cli._common import Commands


def _check(args: argparse.Namespace) -> int:
    failed = False
    for name in args.dirs:
        try:
            path = resolve_dataset(name)
        except FileNotFoundError as exc:
            print(terminal_text(f"{name}: {exc}"), file=sys.stderr)
            failed = True
            continue
        dataset, problems = check_dataset(path)
        for problem in problems:
            print(terminal_text(f"{problem.severity}: {path}/{problem}"), file=sys.stderr)
        if dataset is None:
            errors = sum(p.severity == "error" for p in problems)
            print(terminal_text(f"FAIL {path}: {errors} error(s)"))
            failed = True
        else:
            labeled = sum(c.expected is not None for c in dataset.cases)
            counts = f"{len(dataset.cases)} cases ({labeled} labeled), {len(dataset.examples)} examples"
            own = sum(bool(c.tools) for c in (*dataset.cases, *dataset.examples))
            counts += f", {own} with their own tools" if own else ""
            print(terminal_text(f"ok   {path}: {dataset.task.summary()}; {counts}"))
            source = SCHEMA_FILE if dataset.task.record_schema() is None else f"{TASK_FILE} (derived schema)"
            _say_unenforced(path, dataset.schema, source)
    return 1 if failed else 0


def _say_unenforced(path: Path, schema: Mapping[str, Any], source: str) -> None:
    """Warn of the schema keywords each embedded grammar engine cannot enforce (not an error:
    outputs may break them, and the run says so too)."""
    from quantgate.backends._schema_grammar import GRAMMAR_ENGINES, unenforced_keywords

    for engine in GRAMMAR_ENGINES:
        for keyword in unenforced_keywords(schema, engine=engine):
            warning = f"warning: {path}/{source}: the {engine} grammar does not enforce {keyword}"
            print(terminal_text(warning), file=sys.stderr)


def _list(args: argparse.Namespace) -> int:
    for name in bundled_datasets():
        dataset = load_dataset(name)
        tags = sorted({t for c in dataset.cases for t in c.tags})
        kind = dataset.task.summary()
        print(f"{name:<20} {len(dataset.cases):>4} cases   {kind}   tags: {', '.join(tags)}")
    return 0


def add_parser(commands: Commands) -> None:
    """Add `quantgate datasets` and its actions `check` and `list`."""
    datasets = commands.add_parser("datasets", help="check and list datasets")
    actions = datasets.add_subparsers(dest="datasets_command", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="validate dataset directories; exit 1 on any error")
    check.add_argument("dirs", nargs="+", metavar="DIR", help="dataset directory or bundled name")
    check.set_defaults(handler=_check)
    listing = actions.add_parser("list", help="list the bundled datasets")
    listing.set_defaults(handler=_list)
