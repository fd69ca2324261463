"""Helpers of the signal tests: waiting with a timeout, and the processes still alive in a group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[3]
"""The checkout, the subprocesses' working directory (so `tests` imports)."""


def wait_for(condition: Callable[[], bool], *, timeout: float, what: str) -> None:
    """Poll `condition` until it holds; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} after {timeout:g} s")
        time.sleep(0.05)


def _running(process: psutil.Process) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for init to reap it; it runs nothing)."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def group_members(pgid: int) -> list[psutil.Process]:
    """The running processes of process group `pgid`."""
    members = []
    for process in psutil.process_iter():
        with contextlib.suppress(ProcessLookupError, psutil.NoSuchProcess):
            if os.getpgid(process.pid) == pgid and _running(process):
                members.append(process)
    return members


def running(processes: Iterable[psutil.Process]) -> list[psutil.Process]:
    """Those of `processes` still running (psutil tells a reused pid from the process it had)."""
    return [p for p in processes if p.is_running() and _running(p)]


def describe(processes: Iterable[psutil.Process]) -> str:
    """Pids and command lines, for a failure message."""
    lines = []
    for process in {p.pid: p for p in processes}.values():
        with contextlib.suppress(psutil.NoSuchProcess):
            lines.append(f"{process.pid}: {' '.join(process.cmdline())[:160]}")
    return "; ".join(lines) or "none"


def wait_gone(processes: list[psutil.Process], pgid: int, *, timeout: float, what: str) -> None:
    """Wait until none of `processes` and no process of group `pgid` runs; fail naming those left."""
    deadline = time.monotonic() + timeout
    while left := running(processes) + group_members(pgid):
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: still running after {timeout:g} s: {describe(left)}")
        time.sleep(0.05)


@contextlib.contextmanager
def ctrl_c_for_children() -> Iterator[None]:
    """Within the block, the processes this one starts stop on SIGINT (at Python's default here).

    A shell starts a background job (`pytest &`, `nohup pytest &`) with SIGINT ignored; its children
    inherit that, and `stop_on_signals` keeps an ignored signal ignored, so a test's SIGINT to a run
    would do nothing. SIGINT is ignored again after the block."""
    if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def session(command: list[str], *, stderr: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Start `command` in a new session (its own process group) from the checkout, its stderr
    into a file; whatever of the group still runs at the end is killed, so a failing test leaves
    nothing behind."""
    with stderr.open("wb") as err:
        process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
