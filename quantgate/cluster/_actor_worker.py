"""`ActorWorker`: a run's warm variant kept in a Ray actor on a node, driven round by round.

It is the `VariantWorker` (`quantgate.evaluate.scheduler._pool`) of a run in rounds on a Ray
cluster: the rounds, the stopping rule, the budget, the reference cache and verification are the
local run's (`quantgate.evaluate.scheduler._rounds`); only where a variant is kept warm changes.
The actor (`quantgate.cluster._variant_actor.VariantActor`) is placed on a node that has what the
variant declares (`quantgate.cluster._resources`), pinned there, and holds no Ray resources while
it stays warm: variants take turns, one at a time, as locally, so two warm variants may share a
node without blocking each other. The driver writes each case's record as the actor sends its
outcome back.

An actor that dies (its process killed, its node lost, out of memory) is started again, up to
`retries` times, on another node when one has what the variant declares, and the round's cases
it had not sent back are run there; the cases it had sent stay recorded. After the last attempt
the variant fails (`BackendError`), its records kept.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from tqdm import tqdm

from graphs.evaluation import CaseOutcome
from quantgate.backends import BackendError
from quantgate.cluster._resources import Node, infeasible
from quantgate.cluster._variant_actor import ActorStarted, RoundFailed, VariantActor
from quantgate.evaluate.scheduler._pool import Answers, ModelOptions, ReferenceRecords
from quantgate.evaluate.scheduler._variant import VariantJob, with_backend_module
from quantgate.evaluate.scheduler._warm import RoundRan, Warmed, WorkerEnd
from quantgate.rundir._build import case_record
from quantgate.rundir._store import RunStore
from quantgate.rundir._summary import Placement

__all__ = ["ActorWorker", "node_for"]

_WAIT_S = 0.5
"""How long the driver waits for an actor's next message at a time (Ctrl-C is seen in between)."""


def node_for(resources: Mapping[str, float], nodes: Sequence[Node], avoid: set[str]) -> str | None:
    """The id of an alive node that has all of `resources`, one not in `avoid` when there is one;
    None when none has them."""
    fitting = [
        str(n["NodeID"])
        for n in nodes
        if n.get("Alive") and all(n.get("Resources", {}).get(k, 0.0) >= v for k, v in resources.items())
    ]
    others = [node for node in fitting if node not in avoid]
    chosen = others or fitting
    return chosen[0] if chosen else None


class ActorWorker:
    """A variant warm in a Ray actor, its records written here as they come back.

    Args:
        job: The variant's job.
        store: The run's store (the driver writes the records).
        resources: What the variant declares (`task_resources`): the actor's node has them.
        retries: Times an actor that died is started again.
    """

    def __init__(
        self, job: VariantJob, store: RunStore, *, resources: dict[str, float], retries: int
    ) -> None:
        import ray  # only with Ray installed: quantgate imports without it

        self._ray = ray
        self._job = with_backend_module(replace(job, options=replace(job.options, progress=False)))
        self._store = store
        self._resources = resources
        self._retries = retries
        self._class: Any = ray.remote(max_restarts=0, max_concurrency=1)(VariantActor)  # type: ignore[call-overload]
        self._actor: Any = None
        self._started: ActorStarted | None = None
        self._lost: set[str] = set()
        self._attempts = 0
        self._ended_at: float | None = None
        self._killed = False
        """`kill` was called (the run stops): an actor lost now is not started again."""

    @property
    def name(self) -> str:
        """The variant's name."""
        return self._job.variant.name

    @property
    def placement(self) -> Placement:
        """Where its actor runs (the last one, after a restart), and how many were started."""
        started = self._started
        where: dict[str, Any] = {}
        if started is not None:
            where = {"node_id": started.node_id, "node_ip": started.node_ip, "started_at": started.started_at,
                     "niceness": started.niceness, "ended_at": self._ended_at}  # fmt: skip
        return Placement(executor="ray", attempts=self._attempts, resources=self._resources, **where)

    @property
    def pid(self) -> int | None:
        """The actor's process id on its node (None before it started)."""
        return self._started.pid if self._started else None

    def start(self) -> Warmed:
        """Place the actor on a node and have it load and warm up the variant (raises BackendError
        when no node has what it declares, its backend cannot serve it, or it died each time)."""
        try:
            while True:
                try:
                    return self._launch().warmed
                except self._ray.exceptions.RayActorError as exc:
                    self._lost_actor(exc)
        except BaseException:
            self.kill()
            raise

    def _launch(self) -> ActorStarted:
        ray = self._ray
        nodes = ray.nodes()
        why = infeasible(self._resources, nodes)
        node = node_for(self._resources, nodes, self._lost)
        if why is not None or node is None:
            raise BackendError(f"variant {self.name}: {why or 'no alive node'}")
        strategy = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node, soft=False)
        self._attempts += 1
        # no resources held while warm: variants take turns, and a warm one must not block the next
        self._actor = self._class.options(num_cpus=0, scheduling_strategy=strategy).remote(self._job)
        try:
            self._started = self._get(self._actor.start.remote())
        except ray.exceptions.RayTaskError as exc:  # raised in the actor: its backend, or a bug
            if isinstance(exc.cause, BackendError):
                raise BackendError(str(exc.cause)) from None
            raise RuntimeError(f"variant {self.name} failed in its Ray actor:\n{exc}") from None
        return self._started

    def _get(self, ref: Any) -> Any:
        """`ray.get(ref)`, waiting in short steps so that Ctrl-C is seen."""
        while not self._ray.wait([ref], timeout=_WAIT_S)[0]:
            pass
        return self._ray.get(ref)

    def _lost_actor(self, exc: Exception) -> None:
        """Note an actor that died, and say it; raise BackendError when no attempt is left."""
        where = f" on {self._started.hostname}" if self._started else ""
        first = str(exc).splitlines()[0] if str(exc) else ""
        cause = f"its Ray actor died{where} ({type(exc).__name__}: {first})"
        if self._started is not None:
            self._lost.add(self._started.node_id)
        self._actor, self._started = None, None
        if self._killed:  # stopped from the driver (a round of another machine's thread may be running)
            raise BackendError(f"variant {self.name}: its Ray actor was stopped")
        if self._attempts > self._retries:
            tries = f" after {self._attempts} attempts" if self._attempts > 1 else ""
            raise BackendError(f"variant {self.name}: {cause}{tries}; its finished cases are kept")
        tqdm.write(
            f"quantgate: variant {self.name}: {cause}; starting it again for the round's cases it had not "
            f"sent back (attempt {self._attempts + 1} of {self._retries + 1})",
            file=sys.stderr,
        )

    def run(
        self,
        case_ids: list[str],
        reference_records: ReferenceRecords,
        on_case: Callable[[], None],
        answers: Answers = None,
        *,
        seconds_left: float | None = None,
        model_options: ModelOptions = None,
    ) -> RoundRan:
        """Have the actor evaluate a round's cases, writing each record as it comes back; a lost actor
        is started again for the cases it had not sent (raises BackendError once none is left)."""
        got: dict[str, CaseOutcome] = {}
        walls: list[float] = []
        began = time.perf_counter()
        while True:
            lacking = [case_id for case_id in case_ids if case_id not in got]
            if got and not lacking:  # the lost actor had sent every case: the next round starts another
                return RoundRan(outcomes=tuple(got.values()), wall_s=sum(walls) if walls else None)
            left = None if seconds_left is None else seconds_left - (time.perf_counter() - began)
            try:
                if self._actor is None:
                    self._launch()
                ran = self._round(lacking, reference_records, answers, left, model_options, got, on_case)
            except self._ray.exceptions.RayActorError as exc:
                self._lost_actor(exc)
                continue
            if ran.wall_s is not None:
                walls.append(ran.wall_s)
            # the node's load over the last attempt (a restarted actor's node is the one that ran last)
            return RoundRan(outcomes=tuple(got.values()), wall_s=sum(walls) if walls else None, node=ran.node)

    def _round(
        self,
        case_ids: list[str],
        reference_records: ReferenceRecords,
        answers: Answers,
        seconds_left: float | None,
        model_options: ModelOptions,
        got: dict[str, CaseOutcome],
        on_case: Callable[[], None],
    ) -> RoundRan:
        """One attempt at the round's `case_ids` on the current actor, each outcome kept in `got`."""
        stream = self._actor.run.options(num_returns="streaming").remote(
            case_ids, reference_records, answers, seconds_left, model_options
        )
        while True:
            while not self._ray.wait([stream], timeout=_WAIT_S)[0]:
                pass
            item = self._ray.get(next(stream))
            if isinstance(item, CaseOutcome):
                self._store.write_record(case_record(self.name, item))
                got[item.case_id] = item
                on_case()
            elif isinstance(item, RoundFailed):
                if item.backend:
                    raise BackendError(item.message)
                raise RuntimeError(f"variant {self.name} failed in its Ray actor:\n{item.message}")
            else:
                assert isinstance(item, RoundRan)
                return item

    def rerun(self, case_ids: list[str], first_records: Mapping[str, dict[str, Any] | None]) -> RoundRan:
        """Have the actor answer these cases again, one at a time (nothing written)."""
        try:
            ran: RoundRan = self._get(self._actor.rerun.remote(case_ids, dict(first_records)))
        except self._ray.exceptions.RayActorError as exc:
            raise BackendError(f"variant {self.name}: its Ray actor died ({type(exc).__name__})") from None
        return ran

    def end(self) -> WorkerEnd:
        """Have the actor free the variant, then end it."""
        try:
            ended: WorkerEnd = self._get(self._actor.end.remote())
        except self._ray.exceptions.RayActorError as exc:
            raise BackendError(f"variant {self.name}: its Ray actor died ({type(exc).__name__})") from None
        finally:
            self._ended_at = time.time()
            self.kill()
        return ended

    def kill(self) -> None:
        """End the actor at once, if there is one; none is started again after this."""
        self._killed = True
        if self._actor is not None:
            self._ray.kill(self._actor, no_restart=True)
            self._actor = None
