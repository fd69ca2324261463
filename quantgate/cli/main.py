"""The `quantgate` command line: the root parser, each command's from its own module, and `main`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from quantgate.cli import (
    compare,
    datasets,
    decide,
    doctor,
    ladder,
    load,
    ollama,
    report,
    run,
    schemas,
    score,
)

_COMMANDS = (datasets, score, ladder, run, load, decide, report, compare, doctor, ollama, schemas)
"""The command modules, in the order `quantgate --help` lists them; each has `add_parser`."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="quantgate",
        description="Is a quantized LLM good enough to replace its reference for structured extraction?",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in _COMMANDS:
        command.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `quantgate` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"quantgate: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("quantgate: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
