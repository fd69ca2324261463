"""Connecting the driver to a Ray cluster, or starting a local one, with errors that say what to do.

An address where nothing listens fails at once (Ray itself would retry for minutes, deaf to
Ctrl-C); a cluster that wants a token says how to give one; a local Ray started here runs its
workers at the usual priority (Ray's default niceness of 15 starves them on a busy machine).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from evaluators.errors import QuantgateError, require_extra

__all__ = ["ClusterError", "connected", "normal_priority_workers"]

_CONNECT_TIMEOUT_S = 5.0
"""How long the driver tries to reach a cluster's address before saying nothing answers."""
_NICENESS = "RAY_worker_niceness"
"""The raylet's setting of its workers' niceness (Ray's default: 15)."""


class ClusterError(QuantgateError, RuntimeError):
    """Ray is not installed, or the cluster cannot be reached; the message says which and how."""


@contextmanager
def connected(address: str | None, *, runtime_env: dict[str, Any] | None = None) -> Iterator[None]:
    """Ray connected to the cluster at `address` (`auto`, `HOST:PORT`, `ray://...`), or to a local
    Ray started for the block (None), and disconnected after it; an already connected Ray is used
    as it is.

    Raises:
        MissingExtraError: Ray is not installed (the `cluster` extra).
        ClusterError: The cluster cannot be reached.
    """
    require_extra("cluster", "the Ray executor")
    import ray

    started_here = not ray.is_initialized()
    if started_here:
        address = address or os.environ.get("RAY_ADDRESS") or None
        _check_reachable(address)
        try:
            with normal_priority_workers() if address is None else nullcontext():
                ray.init(
                    address=address, include_dashboard=False, log_to_driver=False, runtime_env=runtime_env
                )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ClusterError(_connect_failure(address, exc)) from None
    try:
        yield
    finally:
        if started_here:
            ray.shutdown()


@contextmanager
def normal_priority_workers() -> Iterator[None]:
    """Have the workers of a Ray started meanwhile on this machine run at the usual priority.

    Ray starts workers at niceness 15 (`RAY_worker_niceness`), which starves a task whenever
    anything else runs on the machine, and distorts its latency figures against a local run's.
    A cluster's nodes get the setting from `ray start`'s environment; a value set by the user wins.
    """
    if _NICENESS in os.environ:
        yield
        return
    os.environ[_NICENESS] = "0"
    try:
        yield
    finally:
        os.environ.pop(_NICENESS, None)


def _connect_failure(address: str | None, exc: Exception) -> str:
    """Why the driver could not connect, with the usual cause when there is one."""
    if address is None:
        return f"cannot start a local Ray: {exc}"
    message = f"cannot connect to the Ray cluster at {address}: {exc}"
    if not os.environ.get("RAY_AUTH_MODE"):
        message += (
            ". If the cluster uses token authentication (Ray 2.59 and later turn it on for a cluster "
            "started by `ray start` on one machine), set RAY_AUTH_MODE=token here, with the cluster's "
            "token in RAY_AUTH_TOKEN or ~/.ray/auth_token"
        )
    return message


def _check_reachable(address: str | None) -> None:
    """Fail at once when nothing listens at a `HOST:PORT` address (Ray itself would retry for
    minutes, deaf to Ctrl-C); `auto`, `ray://` addresses and None are left to Ray.

    Raises:
        ClusterError: The address is not HOST:PORT, or nothing answers there.
    """
    if address is None or address == "auto" or "://" in address:
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(f"the Ray address {address!r} is not auto, HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=_CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ClusterError(
            f"no Ray cluster answers at {address} ({exc.strerror or exc}); start one there with "
            f"`ray start --head --port={port}`, or give the address `ray start` printed"
        ) from None
