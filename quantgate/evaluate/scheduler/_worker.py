"""Running one job in a fresh spawned process, for clean memory figures and crash isolation.

llama.cpp keeps about 200 MiB after a model is freed, so each variant (and the
token-fidelity step) runs in its own process. A crash inside llama.cpp then kills the
worker, not the run.

A worker never outlives the run: it ends when the process that started it ends, even by
`kill -9` (which leaves no chance to clean up), and an interrupted parent (Ctrl-C, SIGTERM)
terminates it before going on. multiprocessing's resource tracker, which the worker shares
with the parent, then exits by itself once both have closed their end of its pipe.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, TypeVar

from tqdm import tqdm

from evaluators.errors import QuantgateError
from quantgate.backends import BackendError
from quantgate.rundir._jsonfile import RunWriteError

Job = TypeVar("Job")
Result = TypeVar("Result")

_PR_SET_PDEATHSIG = 1
"""From <linux/prctl.h>: the signal the kernel sends a process when its parent ends."""
_PARENT_WATCH_S = 0.5
"""How often the watch thread looks at the parent where prctl is not available."""
_TERMINATE_GRACE_S = 5.0
"""How long a terminated worker may take to end before it is killed."""
_ORPHANED_EXIT = 1
"""The exit status of a worker that found its parent gone (nobody reads it)."""


class WorkerDiedError(QuantgateError, RuntimeError):
    """The worker process ended without sending a result (killed, or crashed in native code)."""


class WorkerFailedError(QuantgateError, RuntimeError):
    """The job raised in the worker process; the message is the worker's traceback."""


def _kill_with_parent() -> bool:
    """Have Linux SIGKILL this process when its parent ends; False where that cannot be asked.

    Strictly the kernel watches the parent's thread that started this process; `run_in_worker`
    waits for the worker in that thread, so the thread outlives the worker.
    """
    if sys.platform != "linux":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError):  # no C library to ask, or no prctl in it
        return False


def _watch_parent(parent: BaseProcess) -> None:
    """Exit this process at once when `parent` ends (a daemon thread's target, where prctl is not
    available); the parent's sentinel tells at once, the parent pid check is a fallback."""
    while parent.is_alive() and os.getppid() == parent.pid:
        parent.join(_PARENT_WATCH_S)
    os._exit(_ORPHANED_EXIT)


def die_with_parent() -> None:
    """Make this worker end when the process that started it ends, by any means."""
    parent = multiprocessing.parent_process()
    if parent is None:  # not started by multiprocessing: nothing to watch
        return
    if not _kill_with_parent():
        watch = threading.Thread(target=_watch_parent, args=(parent,), name="parent-watch", daemon=True)
        watch.start()
    if os.getppid() != parent.pid:  # it ended before prctl was set: no signal will come
        os._exit(_ORPHANED_EXIT)


def prepare_worker() -> None:
    """What every worker process does first: end with its parent, let `terminate()` end it."""
    die_with_parent()
    # terminate() must end the worker, even when quantgate was started with SIGTERM ignored
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # tqdm's default lock includes a named semaphore, which the resource tracker reports as
    # leaked when the worker is killed; nothing but this process writes its progress bars
    tqdm.set_lock(threading.RLock())


def _worker_main(sender: Connection, function: Callable[[Any], Any], job: Any) -> None:
    prepare_worker()
    try:
        sender.send(("ok", function(job)))
    except KeyboardInterrupt:
        pass  # the parent handles the interruption; what the job wrote to disk stays
    except BackendError as exc:
        sender.send(("backend_error", str(exc)))
    except RunWriteError as exc:
        sender.send(("write_error", (str(exc.path), exc.errno, exc.reason)))
    except Exception:
        sender.send(("crash", traceback.format_exc()))
    finally:
        sender.close()


def _receive(receiver: Connection) -> tuple[str, Any] | None:
    """The worker's `(kind, payload)` message, or None when it ended without sending one."""
    try:
        kind, payload = receiver.recv()
    except EOFError:
        return None
    return kind, payload


def stop_worker(worker: BaseProcess) -> None:
    """Terminate the worker (SIGTERM), and kill it if it has not ended after a grace period."""
    if worker.pid is None:  # it was not started
        return
    worker.terminate()
    worker.join(_TERMINATE_GRACE_S)
    if worker.exitcode is None:
        worker.kill()
        worker.join()


def run_in_worker(function: Callable[[Job], Result], job: Job, *, name: str) -> Result:
    """Call `function(job)` in a fresh spawned process and return its result.

    The worker ends with this process, even when this one is killed (see `die_with_parent`).

    Args:
        function: A module-level function (it is pickled by reference).
        job: Its picklable argument.
        name: The worker process's name.

    Raises:
        BackendError: The job raised one (its message is kept).
        RunWriteError: The job could not write a run file (its file and reason are kept).
        WorkerFailedError: The job raised anything else.
        WorkerDiedError: The process ended without a result.
        KeyboardInterrupt: Ctrl-C, or SIGTERM under `quantgate.evaluate._signals.stop_on_signals`;
            the worker is terminated first.
    """
    spawn = multiprocessing.get_context("spawn")
    receiver, sender = spawn.Pipe(duplex=False)
    worker = spawn.Process(target=_worker_main, args=(sender, function, job), name=name)
    try:
        worker.start()
        sender.close()  # the worker's end: ours reads EOF once the worker has ended
        message = _receive(receiver)
        worker.join()
    except BaseException:  # an interruption, above all: the worker must not go on without us
        stop_worker(worker)
        raise
    finally:
        sender.close()
        receiver.close()
    if message is None:
        raise WorkerDiedError(f"its worker process died (exit code {worker.exitcode})")
    kind, payload = message
    if kind == "backend_error":
        raise BackendError(payload)
    if kind == "write_error":
        path, errno, reason = payload
        raise RunWriteError(Path(path), OSError(errno, reason) if errno else OSError(reason))
    if kind == "crash":
        raise WorkerFailedError(payload)
    result: Result = payload
    return result


def run_isolated(function: Callable[[Job], Result], job: Job, *, name: str, what: str) -> Result:
    """`run_in_worker`, with the worker's failures said as errors about `what`.

    Raises:
        BackendError: The job raised one, or the worker died (`what` could not be served).
        RuntimeError: The job raised anything else; the message has the worker's traceback.
    """
    try:
        return run_in_worker(function, job, name=name)
    except WorkerDiedError as exc:
        raise BackendError(f"{what}: {exc}") from None
    except WorkerFailedError as exc:
        raise RuntimeError(f"{what} failed in its worker process:\n{exc}") from None
