"""`quantgate schemas DIR`: write the JSON Schema of each run-directory file into DIR."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from quantgate.cli._common import Commands


def _schemas(args: argparse.Namespace) -> int:
    from quantgate.cli._common import check_output_dir
    from quantgate.rundir._schemas import write_schemas

    check_output_dir(Path(args.dir), "schemas DIR")
    for path in write_schemas(Path(args.dir)):
        print(path)
    return 0


def add_parser(commands: Commands) -> None:
    """Add `quantgate schemas`."""
    schemas = commands.add_parser(
        "schemas",
        help="write the JSON Schema of each run-directory file "
        "(summary, record, variants, fidelity, load, decision) into DIR",
    )
    schemas.add_argument("dir", metavar="DIR")
    schemas.set_defaults(handler=_schemas)
