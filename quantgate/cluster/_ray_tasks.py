"""The Ray tasks: one evaluates a variant on a node, streaming messages back; another runs any
other per-variant call (`VariantCall`: a load test, embedding a corpus) and returns its result.

The task runs the same evaluation as a local worker (`quantgate.evaluate.scheduler._variant`), but writes
nothing: it yields where it runs, then each case's outcome as the case finishes, then the
variant's result. The driver alone writes the run directory. Ray starts a fresh worker process
for each task (`max_calls=1`), so memory figures start from a clean slate, as a local worker's do.
"""

from __future__ import annotations

import os
import platform
import queue
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from graphs.evaluation import CaseOutcome
from quantgate.backends import BackendError
from quantgate.evaluate.scheduler._executor import run_call
from quantgate.evaluate.scheduler._variant import VariantJob, VariantRun, evaluate_variant

__all__ = ["CallReturned", "TaskEnded", "TaskStarted", "call_task", "variant_task"]


@dataclass(frozen=True, kw_only=True)
class TaskStarted:
    """The first message of a task: the node it runs on."""

    node_id: str
    node_ip: str
    hostname: str
    started_at: float
    niceness: int


@dataclass(frozen=True, kw_only=True)
class TaskEnded:
    """The last message of a task: the variant's result, or why it has none."""

    run: VariantRun | None
    error: str | None
    ended_at: float


_END = object()
"""Put on the outcome queue when the evaluation thread ends."""


def variant_task(job: VariantJob) -> Iterator[object]:
    """Evaluate `job` on this node, yielding `TaskStarted`, each `CaseOutcome`, then `TaskEnded`.

    Args:
        job: The variant's job (its `options.progress` off: the driver shows progress), with
            its `backend_module` (imported here, so a backend registered outside quantgate is
            known on this node too).
    """
    import ray  # only where Ray runs this: quantgate imports without Ray installed

    context = ray.get_runtime_context()
    yield TaskStarted(
        node_id=context.get_node_id(),
        node_ip=ray.util.get_node_ip_address(),  # type: ignore[no-untyped-call]  # Ray leaves it untyped
        hostname=platform.node(),
        started_at=time.time(),
        niceness=os.nice(0),
    )
    outcomes: queue.Queue[object] = queue.Queue()
    ended: dict[str, object] = {}

    def evaluate() -> None:
        try:
            ended["run"] = evaluate_variant(job, outcomes.put)
        except BackendError as exc:
            ended["error"] = str(exc)
        except Exception:
            ended["error"] = f"failed in its Ray task on {platform.node()}:\n{traceback.format_exc()}"
        finally:
            outcomes.put(_END)

    thread = threading.Thread(target=evaluate, name=f"quantgate-{job.variant.name}")
    thread.start()
    while (item := outcomes.get()) is not _END:
        assert isinstance(item, CaseOutcome)
        yield item
    thread.join()
    run = ended.get("run")
    error = ended.get("error")
    yield TaskEnded(
        run=run if isinstance(run, VariantRun) else None,
        error=error if isinstance(error, str) else None,
        ended_at=time.time(),
    )


@dataclass(frozen=True, kw_only=True)
class CallReturned:
    """What a call's task returns: the call's result, and the node it ran on."""

    result: Any
    hostname: str


def call_task(work: tuple[Callable[[Any], Any], Any, str | None]) -> CallReturned:
    """A call's `run_call(work)` on this node, with the node's name."""
    return CallReturned(result=run_call(work), hostname=platform.node())
