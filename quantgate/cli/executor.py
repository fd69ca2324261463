"""`--executor local|ray`, `--ray-address` and `--ray-retries`: where a run's variants are evaluated."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from quantgate.cli.common import non_negative_int

if TYPE_CHECKING:
    from quantgate.evaluate.executor import VariantExecutor

EXECUTOR_FLAGS = ("executor", "ray_address", "ray_retries")
"""The destinations of the flags, which say where a run goes on, not how it was started."""


def add_executor_flags(parser: argparse.ArgumentParser) -> None:
    """Add the executor flags to a command's parser."""
    group = parser.add_argument_group("where variants are evaluated")
    group.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local: one variant after another in worker processes here (default); ray: each variant as "
        "a Ray task, side by side on a cluster's nodes (needs: pip install 'quantgate[ray]')",
    )
    group.add_argument(
        "--ray-address",
        metavar="auto|HOST:PORT",
        help="--executor ray: the cluster to connect to (auto: the one RAY_ADDRESS or `ray start` on this "
        "machine names); default: a local Ray started for the run",
    )
    group.add_argument(
        "--ray-retries",
        type=non_negative_int,
        default=1,
        help="--executor ray: times a variant's task that died (node lost, out of memory) is started again "
        "for the cases it had not sent back (default 1)",
    )


@contextmanager
def cli_executor(args: argparse.Namespace, *, progress: bool) -> Iterator[VariantExecutor]:
    """The executor the flags ask for, connected (Ray) for the length of the block.

    Raises:
        ValueError: `--ray-address` or `--ray-retries` without `--executor ray`.
        RuntimeError: Ray is not installed, or the cluster cannot be reached (`ClusterError`).
    """
    if args.executor != "ray":
        if args.ray_address is not None or args.ray_retries != 1:
            raise ValueError("--ray-address and --ray-retries go with --executor ray")
        from quantgate.evaluate.executor import LocalExecutor

        yield LocalExecutor()
        return
    from quantgate.cluster import RayExecutor

    with RayExecutor.connect(args.ray_address, retries=args.ray_retries, progress=progress) as executor:
        yield executor
