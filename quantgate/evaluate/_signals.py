"""Stopping on a signal: SIGTERM handled as Ctrl-C, and a second signal that exits at once.

`timeout`, systemd and Kubernetes stop a process with SIGTERM, whose default ends Python on the
spot: summary.json would never say "interrupted", and the worker would be left running alone.
Under `stop_on_signals()`, SIGINT and SIGTERM raise `Interrupted`, a `KeyboardInterrupt`, so the
paths that already handle Ctrl-C (the run's summary, terminating the worker) handle both. A
second signal while stopping exits at once with 128 + its number; the worker then dies with
this process (`quantgate.evaluate.scheduler._worker`). GNU `timeout` signals the process and then its group,
so it sends two: before that fast exit, what `before_fast_exit` registered runs (the run writes
its summary as `interrupted`, a run not started yet removes its directory).
"""

from __future__ import annotations

import os
import signal
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals that stop quantgate cleanly."""

_stop_asked = threading.Event()
_depth = 0
"""How many `stop_on_signals` blocks this thread is in (the first one sets the handlers)."""
_last_words: list[Callable[[], None]] = []
"""What `before_fast_exit` blocks registered, innermost last."""


def stop_asked() -> bool:
    """Whether a stop signal came under `stop_on_signals()`: work running on other threads (the
    cases of an in-process variant) asks this before it starts anything new."""
    return _stop_asked.is_set()


class Interrupted(KeyboardInterrupt):
    """A stop asked for by a signal.

    Attributes:
        signal: The signal received.
        run_dir: The run directory the interruption left, once the run has said so.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)  # the args rebuild it when pickled
        self.signal = signal.Signals(signum)
        self.run_dir: Path | None = None

    def __str__(self) -> str:
        return f"interrupted by {self.signal.name}"

    @property
    def exit_status(self) -> int:
        """The shell's status of a process ended by this signal: 128 + its number."""
        return 128 + self.signal.value


def note_run_dir(interruption: KeyboardInterrupt, run_dir: Path) -> None:
    """Record in an `Interrupted` the run directory it interrupted (a plain KeyboardInterrupt
    carries nothing)."""
    if isinstance(interruption, Interrupted):
        interruption.run_dir = run_dir


@contextmanager
def before_fast_exit(last_words: Callable[[], None]) -> Iterator[None]:
    """Within the block, a second signal's fast exit first calls `last_words` (innermost block
    first), so what must be on disk is (a run's summary saying `interrupted`).

    `last_words` runs in the signal handler, in the main thread between two of its statements,
    and the process ends right after: it must leave the files whole whatever was interrupted
    (replace them atomically) and be quick. What it raises is said on stderr, not raised.
    """
    _last_words.append(last_words)
    try:
        yield
    finally:
        _last_words.remove(last_words)


def _say_last_words() -> None:
    for last_words in reversed(_last_words):
        try:
            last_words()
        except BaseException as exc:  # exiting anyway: say it and go on with the others
            os.write(2, f"quantgate: {''.join(traceback.format_exception_only(exc)).strip()}\n".encode())


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise `Interrupted`; a second one exits at once.

    The previous handlers come back when the block ends. A signal ignored when the block starts
    (a shell's background job ignores SIGINT) stays ignored, and outside the main thread, where
    Python cannot set handlers, nothing changes. Within a block already, a nested one changes
    nothing either: the command line's block covers the run's.
    """
    global _depth
    if threading.current_thread() is not threading.main_thread() or _depth:
        yield
        return
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        _stop_asked.set()
        if stopping:
            name = signal.Signals(signum).name
            os.write(2, f"quantgate: {name} while stopping: exiting at once\n".encode())
            _say_last_words()
            os._exit(128 + signum)
        stopping = True
        raise Interrupted(signum)

    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for signum, handler in previous.items():
        if handler != signal.SIG_IGN:
            signal.signal(signum, stop)
    _stop_asked.clear()
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        _stop_asked.clear()
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
