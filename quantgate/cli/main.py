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
    embed,
    ladder,
    load,
    ollama,
    report,
    run,
    schemas,
    score,
    serve,
)
from quantgate.evaluate.signals import Interrupted, stop_on_signals
from quantgate.formatting import terminal_text

EXIT_FAILURE = 1
EXIT_USAGE = 2
"""argparse's own status for a bad command line; also for bad input files (named in the message).
The decision's statuses (0, 4, 3, and 5 for an incomplete run) are `quantgate.rundir.decision.EXIT_STATUS`."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT); SIGTERM exits with 143 (128 + SIGTERM), like a shell's killed command."""

_COMMANDS = (
    datasets,
    score,
    ladder,
    run,
    load,
    embed,
    decide,
    report,
    compare,
    serve,
    doctor,
    ollama,
    schemas,
)
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
    with stop_on_signals():  # SIGTERM stops a run as Ctrl-C does
        try:
            return int(args.handler(args))
        except (FileNotFoundError, ValueError) as exc:  # bad input, named in the message
            print(f"quantgate: error: {terminal_text(exc, lines=True)}", file=sys.stderr)
            return EXIT_USAGE
        except RuntimeError as exc:  # the work itself failed (a run that cannot be decided, ...)
            print(f"quantgate: error: {terminal_text(exc, lines=True)}", file=sys.stderr)
            return EXIT_FAILURE
        except KeyboardInterrupt as exc:
            return _interrupted(exc)


def _interrupted(exc: KeyboardInterrupt) -> int:
    """Say what stopped quantgate and where the run so far is; return the exit status."""
    if not isinstance(exc, Interrupted):  # raised by other code than our signal handler
        print("quantgate: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    where = ""
    if exc.run_dir is not None:
        where = f"; the run so far is in {exc.run_dir} (go on with: quantgate run --resume {exc.run_dir})"
    print(terminal_text(f"quantgate: {exc}{where}"), file=sys.stderr)
    return exc.exit_status


if __name__ == "__main__":
    sys.exit(main())
