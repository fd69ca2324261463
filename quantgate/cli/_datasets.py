"""`quantgate datasets check DIR...`, `quantgate datasets list` and `quantgate datasets import bfcl`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluators.errors import MissingInputError
from quantgate._formatting import terminal_text
from quantgate.cli._common import non_negative_int
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


def _import_bfcl(args: argparse.Namespace) -> int:
    from quantgate.inputs._bfcl import bfcl_card, convert_bfcl, write_bfcl_dataset

    questions = Path(args.questions)
    answers = None if args.answers == "-" else Path(args.answers)
    for file in (questions, answers):
        if file is not None and not file.is_file():
            raise MissingInputError(f"{file}: no such file")
    dataset = convert_bfcl(questions, answers).with_examples(args.examples)
    out = Path(args.out_dir)
    write_bfcl_dataset(dataset, out, bfcl_card(dataset, questions, answers))
    counts = ", ".join(f"{name} {n}" for name, n in sorted(dataset.categories.items()))
    calls = "several calls" if dataset.task["calls"] == "many" else "one call or none"
    examples = f", {len(dataset.examples)} examples" if dataset.examples else ""
    print(terminal_text(f"wrote {out}: {len(dataset.cases)} cases ({counts}){examples}, records of {calls}"))
    for id_, why in dataset.skipped.items():
        print(terminal_text(f"left out {id_}: {why}"), file=sys.stderr)
    return 0


def add_parser(commands: Commands) -> None:
    """Add `quantgate datasets` and its actions `check`, `list` and `import`."""
    datasets = commands.add_parser("datasets", help="check and list datasets")
    actions = datasets.add_subparsers(dest="datasets_command", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="validate dataset directories; exit 1 on any error")
    check.add_argument("dirs", nargs="+", metavar="DIR", help="dataset directory or bundled name")
    check.set_defaults(handler=_check)
    listing = actions.add_parser("list", help="list the bundled datasets")
    listing.set_defaults(handler=_list)
    importing = actions.add_parser("import", help="convert another benchmark's files into a dataset")
    sources = importing.add_subparsers(dest="import_source", required=True, metavar="SOURCE")
    bfcl = sources.add_parser(
        "bfcl",
        help="a BFCL category (bfcl-eval's bfcl_eval/data/): its questions and possible answers",
        description="Convert a Berkeley Function Calling Leaderboard category into a tool-calling dataset "
        "with per-case tools and BFCL's gold (acceptable values per argument); see docs/tasks.md.",
    )
    bfcl.add_argument("questions", metavar="QUESTIONS", help="the questions file, BFCL_v4_<category>.json")
    bfcl.add_argument(
        "answers", metavar="ANSWERS", help="its possible_answer file; - for a category without (irrelevance)"
    )
    bfcl.add_argument("out_dir", metavar="OUT_DIR", help="the dataset directory to write (new or empty)")
    bfcl.add_argument(
        "--examples",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="the first N questions become the few-shot examples (examples.jsonl), never scored (default 0: "
        "a run then takes some labeled cases as examples)",
    )
    bfcl.set_defaults(handler=_import_bfcl)
