"""The Ray actor that keeps one variant warm on a node, for a run in rounds over a cluster.

`VariantActor` is the node's side of `quantgate.cluster._actor_worker.ActorWorker`: it holds a
`WarmVariant` (`quantgate.evaluate.scheduler._warm`), loaded and warmed up once by `start`, and
answers each round's cases in `run`, yielding each case's outcome as it finishes, then the
round's `RoundRan` (its outcomes left out: the driver has them already). It writes nothing: the
driver alone writes the run directory. The reference's answers a candidate verifies, and the
reference's records it is scored against, come as `run`'s arguments, through Ray's object store.
An actor is a process of its own, so a variant's memory figures start from a clean slate, as a
local worker's do.
"""

from __future__ import annotations

import importlib
import os
import platform
import queue
import threading
import time
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from graphs.extraction import GivenAnswer
from quantgate.backends import BackendError
from quantgate.evaluate._cpu_readings import read_cpu
from quantgate.evaluate.scheduler._variant import VariantJob
from quantgate.evaluate.scheduler._warm import NodeReadings, RoundRan, Warmed, WarmVariant, WorkerEnd

__all__ = ["ActorStarted", "RoundFailed", "VariantActor"]


@dataclass(frozen=True, kw_only=True)
class ActorStarted:
    """A variant loaded and warmed up on a node: what it took, and where it runs."""

    warmed: Warmed
    node_id: str
    node_ip: str
    hostname: str
    pid: int
    started_at: float
    niceness: int


@dataclass(frozen=True, kw_only=True)
class RoundFailed:
    """The last message of a round that raised: its backend could not serve it (`backend`), or the
    traceback of anything else."""

    message: str
    backend: bool


_END = object()
"""Put on the outcome queue when a round's evaluation thread ends."""


class VariantActor:
    """One variant, warm on a node (its methods are called one at a time by the driver).

    Args:
        job: The variant's job (its `options.progress` off), with its `backend_module`.
    """

    def __init__(self, job: VariantJob) -> None:
        if job.backend_module is not None:  # registers the backend in this process
            importlib.import_module(job.backend_module)
        self._outcomes: queue.Queue[object] = queue.Queue()
        self._warm = WarmVariant(job, self._outcomes.put)

    def start(self) -> ActorStarted:
        """Open and warm up the variant (raises BackendError when it cannot be served)."""
        import ray  # only where Ray runs this

        warmed = self._warm.start()
        return ActorStarted(
            warmed=warmed,
            node_id=self._node_id(),
            node_ip=ray.util.get_node_ip_address(),  # type: ignore[no-untyped-call]  # Ray leaves it untyped
            hostname=platform.node(),
            pid=os.getpid(),
            started_at=time.time(),
            niceness=os.nice(0),
        )

    def run(
        self,
        case_ids: list[str],
        reference_records: Mapping[str, dict[str, Any] | None] | None,
        answers: Mapping[str, list[GivenAnswer | str | None]] | None,
        seconds_left: float | None,
        model_options: Mapping[str, Mapping[str, Any]] | None,
    ) -> Iterator[object]:
        """A round's cases: yields each `CaseOutcome` as it finishes, then the `RoundRan` without its
        outcomes, or `RoundFailed`."""
        ended: dict[str, object] = {}

        def evaluate() -> None:
            try:
                ended["ran"] = self._warm.run(
                    case_ids,
                    reference_records,
                    answers,
                    seconds_left=seconds_left,
                    model_options=model_options,
                )
            except BackendError as exc:
                ended["ran"] = RoundFailed(message=str(exc), backend=True)
            except Exception:
                ended["ran"] = RoundFailed(message=traceback.format_exc(), backend=False)
            finally:
                self._outcomes.put(_END)

        before = read_cpu()
        thread = threading.Thread(target=evaluate, name="quantgate-round")
        thread.start()
        while (item := self._outcomes.get()) is not _END:
            yield item
        thread.join()
        ran = ended["ran"]
        if isinstance(ran, RoundRan):
            node = NodeReadings(
                before=before, after=read_cpu(), node_id=self._node_id(), host=platform.node()
            )
            ran = replace(ran, outcomes=(), node=node)
        yield ran

    @staticmethod
    def _node_id() -> str:
        import ray  # only where Ray runs this

        return ray.get_runtime_context().get_node_id()

    def rerun(self, case_ids: list[str], first_records: Mapping[str, dict[str, Any] | None]) -> RoundRan:
        """Answer these cases again, one at a time (nothing written: the noise floor's arm)."""
        return self._warm.rerun(case_ids, first_records)

    def end(self) -> WorkerEnd:
        """Free the variant; its memory figures."""
        return self._warm.end()
