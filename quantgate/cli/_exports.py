"""`--junit FILE` and `--mlflow [TRACKING_URI]` of `run` and `decide`: the decision, once written,
also as JUnit XML and as MLflow runs (`quantgate.export`)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from evaluators.errors import UsageError, require_extra
from quantgate._formatting import terminal_text

EXPORT_FLAGS = ("junit", "mlflow")
"""The destinations of the flags, which say where a decided run's results also go."""


def add_export_flags(parser: argparse.ArgumentParser) -> None:
    """Add `--junit` and `--mlflow` to a command's parser."""
    group = parser.add_argument_group("results where teams already look (docs/automation.md)")
    group.add_argument(
        "--junit",
        metavar="FILE",
        help="also write the decision as JUnit XML: a test case per variant and gate, a failed gate a "
        "<failure> with its evidence, an inconclusive or not measured gate <skipped> (for CI test reports); "
        "a regular file, written in place (not a device such as /dev/stdout)",
    )
    group.add_argument(
        "--mlflow",
        nargs="?",
        const="",  # given without a value: MLFLOW_TRACKING_URI, else ./mlruns
        metavar="TRACKING_URI",
        help="also log the decided run to MLflow: a run per variant (spec as parameters, measured figures "
        "as metrics, verdict as tags) under a parent run with the decision and report as artifacts "
        "(default URI: MLFLOW_TRACKING_URI, else a file store in ./mlruns; needs: pip install "
        "'quantgate[mlflow]')",
    )


def check_export_flags(args: argparse.Namespace) -> None:
    """Refuse a `--junit` path that cannot be written, and `--mlflow` without MLflow, before any work.

    Raises:
        UsageError: The path is a directory or another file that is not a regular one (a device
            such as /dev/stdout, a FIFO), its directory is missing or not writable, the file is not
            writable, or MLflow is not installed.
    """
    if args.junit is not None:
        _check_writable(Path(args.junit))
    if args.mlflow is not None:
        require_extra("mlflow", "--mlflow")


def _check_writable(path: Path) -> None:
    from quantgate.export._junit import not_a_file

    if path.is_dir():
        raise UsageError(f"--junit {path}: is a directory; give a file name (e.g. {path / 'quantgate.xml'})")
    if (kind := not_a_file(path)) is not None:
        raise UsageError(f"--junit {path}: is {kind}, not a regular file; give a file name")
    if (stream := _own_output(path)) is not None:  # /dev/stdout redirected to a file, say
        raise UsageError(
            f"--junit {path}: is the command's own {stream}, not a file of its own; give a file name"
        )
    if path.exists():  # written in place (through a symlink): its directory need not be writable
        if not os.access(path, os.W_OK):
            raise UsageError(f"--junit {path}: the file is not writable")
        return
    parent = path.resolve().parent  # a dangling symlink's target is created where it points
    if not parent.is_dir():
        raise UsageError(f"--junit {path}: the directory {parent} does not exist; create it first")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"--junit {path}: the directory {parent} is not writable")


def _own_output(path: Path) -> str | None:
    """`stdout` or `stderr` if `path` is the file this process writes them to, else None."""
    try:
        target = path.stat()
    except OSError:
        return None
    for name, descriptor in (("stdout", 1), ("stderr", 2)):
        try:
            if os.path.samestat(target, os.fstat(descriptor)):
                return name
        except OSError:  # the stream is closed
            continue
    return None


def write_exports(run_dir: Path, args: argparse.Namespace, *, quiet: bool = False) -> None:
    """Write the decided run at `run_dir` (a run, or a suite: each task) where the flags ask."""
    if args.junit is None and args.mlflow is None:
        return
    from quantgate.export import decided_runs, log_to_mlflow, write_junit

    runs = decided_runs(run_dir)
    if args.junit is not None:
        write_junit(Path(args.junit), runs)
        if not quiet:
            print(terminal_text(f"JUnit XML: {args.junit}"))
    if args.mlflow is not None:
        parents = log_to_mlflow(runs, args.mlflow or None)
        if not quiet:
            logged = f"MLflow: {len(parents)} run(s) logged, parent run id(s) {', '.join(parents)}"
            print(terminal_text(logged))
