"""Running one job in a fresh spawned process, for clean memory figures and crash isolation.

llama.cpp keeps about 200 MiB after a model is freed, so each variant (and the
token-fidelity step) runs in its own process. A crash inside llama.cpp then kills the
worker, not the run.
"""

from __future__ import annotations

import multiprocessing
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from quantgate.backends import BackendError

Job = TypeVar("Job")
Result = TypeVar("Result")


class WorkerDiedError(RuntimeError):
    """The worker process ended without sending a result (killed, or crashed in native code)."""


class WorkerFailedError(RuntimeError):
    """The job raised in the worker process; the message is the worker's traceback."""


def _worker_main(sender: Connection, function: Callable[[Any], Any], job: Any) -> None:
    try:
        sender.send(("ok", function(job)))
    except KeyboardInterrupt:
        pass  # the parent handles the interruption; what the job wrote to disk stays
    except BackendError as exc:
        sender.send(("backend_error", str(exc)))
    except Exception:
        sender.send(("crash", traceback.format_exc()))
    finally:
        sender.close()


def run_in_worker(function: Callable[[Job], Result], job: Job, *, name: str) -> Result:
    """Call `function(job)` in a fresh spawned process and return its result.

    Args:
        function: A module-level function (it is pickled by reference).
        job: Its picklable argument.
        name: The worker process's name.

    Raises:
        BackendError: The job raised one (its message is kept).
        WorkerFailedError: The job raised anything else.
        WorkerDiedError: The process ended without a result.
        KeyboardInterrupt: Ctrl-C; the worker is terminated.
    """
    spawn = multiprocessing.get_context("spawn")
    receiver, sender = spawn.Pipe(duplex=False)
    worker = spawn.Process(target=_worker_main, args=(sender, function, job), name=name)
    worker.start()
    sender.close()
    try:
        kind, payload = receiver.recv()
    except EOFError:
        worker.join()
        raise WorkerDiedError(f"its worker process died (exit code {worker.exitcode})") from None
    except KeyboardInterrupt:
        worker.terminate()
        raise
    finally:
        worker.join()
        receiver.close()
    if kind == "backend_error":
        raise BackendError(payload)
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
