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

EXIT_FAILURE = 1
EXIT_USAGE = 2
"""argparse's own status for a bad command line; also for bad input files (named in the message).
The decision's statuses (0, 4, 3) are `quantgate.rundir.decision.EXIT_STATUS`."""

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
    except (FileNotFoundError, ValueError) as exc:  # bad input, named in the message
        print(f"quantgate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RuntimeError as exc:  # the work itself failed (a run that cannot be decided, ...)
        print(f"quantgate: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("quantgate: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
