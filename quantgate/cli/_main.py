"""The `quantgate` command line: the root parser, each command's from its own module, and `main`."""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import traceback
from collections.abc import Sequence
from pathlib import Path

from evaluators.errors import QuantgateError, UsageError
from quantgate._formatting import terminal_text
from quantgate._hardware import package_version
from quantgate.cli import _capacity as capacity
from quantgate.cli import _compare as compare
from quantgate.cli import _datasets as datasets
from quantgate.cli import _decide as decide
from quantgate.cli import _doctor as doctor
from quantgate.cli import _embed as embed
from quantgate.cli import _ladder as ladder
from quantgate.cli import _load as load
from quantgate.cli import _ollama as ollama
from quantgate.cli import _report as report
from quantgate.cli import _run as run
from quantgate.cli import _schemas as schemas
from quantgate.cli import _score as score
from quantgate.cli import _serve as serve
from quantgate.evaluate._signals import Interrupted, stop_on_signals

EXIT_FAILURE = 1
"""The work failed (a `QuantgateError`), or an error no code foresaw (a bug; its traceback is logged)."""
EXIT_USAGE = 2
"""argparse's own status for a bad command line; also for any `UsageError` (bad input, named in the
message). The decision's statuses (0, 4, 3, and 5 for an incomplete run) are
`quantgate.rundir._decision.EXIT_STATUS`."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT); SIGTERM exits with 143 (128 + SIGTERM), like a shell's killed command."""

_COMMANDS = (
    datasets,
    score,
    ladder,
    run,
    load,
    capacity,
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
        except QuantgateError as exc:  # bad input (a UsageError) or failed work, named in the message
            print(f"quantgate: error: {terminal_text(exc, lines=True)}", file=sys.stderr)
            return EXIT_USAGE if isinstance(exc, UsageError) else EXIT_FAILURE
        except KeyboardInterrupt as exc:
            return _interrupted(exc)
        except Exception as exc:  # a bug, or a library's error no code turned into a QuantgateError
            print(terminal_text(f"quantgate: error: {_unforeseen(exc, argv)}"), file=sys.stderr)
            return EXIT_FAILURE


def _unforeseen(exc: Exception, argv: Sequence[str] | None) -> str:
    """One line on an error no code foresaw: its type, the first line of its message, and the log
    file (`quantgate-error-*.log` in the temporary directory) that holds its whole traceback."""
    kind = type(exc).__qualname__
    if type(exc).__module__ != "builtins":
        kind = f"{type(exc).__module__}.{kind}"
    message = str(exc).strip().splitlines()
    line = f"{kind}: {message[0]}{' ...' if len(message) > 1 else ''}" if message else kind
    command = shlex.join(["quantgate", *(sys.argv[1:] if argv is None else argv)])
    try:
        # a byte that is not UTF-8 (a lone surrogate) in the command or the error is written as \udcff
        with tempfile.NamedTemporaryFile(
            "w", prefix="quantgate-error-", suffix=".log", delete=False, encoding="utf-8",
            errors="backslashreplace",
        ) as log:  # fmt: skip
            log.write(f"quantgate {package_version('quantgate')}: {command}\n\n")
            log.write("".join(traceback.format_exception(exc)))
    except OSError as log_error:  # a full disk, say: the error itself still gets its line
        return f"{line} (an unexpected error; its traceback could not be logged: {log_error})"
    return f"{line} (an unexpected error, likely a bug; its traceback is in {Path(log.name)})"


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
