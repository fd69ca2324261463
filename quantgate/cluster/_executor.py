"""`RayExecutor`: a run on a Ray cluster. Its variants are kept warm in Ray actors, one per
variant on a node that has what it declares (`quantgate.cluster._actor_worker`), and driven in
the local run's interleaved rounds (`quantgate.evaluate.scheduler._rounds`): same stopping rule,
budget, reference cache and verification. A run whose server variants split their cases between
nodes (`shards`, `quantgate.cluster._shards`) runs each variant as a Ray task instead, evaluated
whole, side by side; any other per-variant call (a load test, embeddings, token fidelity) is a
task returning its result.

The driver (the process running `quantgate run`) alone writes the run directory: each case's
record as an actor or task sends its outcome back, each variant's entry as it settles or ends. So
the run directory is the same as a local run's, and an interrupted run resumes the same way.

A task that dies (its worker crashed or was killed, its node was lost, out of memory) is started
again for the cases it had not sent back, up to `retries` times; then its variant is reported as
failed and the run goes on (an actor likewise: `ActorWorker`). Ctrl-C (or SIGTERM) cancels every
task still running.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from tqdm import tqdm

from graphs.evaluation import CaseOutcome
from quantgate.backends import backend_module, capabilities
from quantgate.cluster._actor_worker import ActorWorker
from quantgate.cluster._connection import connected
from quantgate.cluster._node_capacity import node_capacity
from quantgate.cluster._ray_tasks import CallReturned, TaskEnded, TaskStarted, call_task, variant_task
from quantgate.cluster._resources import infeasible, task_resources, to_ray_options
from quantgate.cluster._shards import ShardEnded, merged, shard_jobs, why_not_split
from quantgate.evaluate._options import RunOptions
from quantgate.evaluate.scheduler._executor import Called, Evaluated, LocalExecutor, Result, VariantCall
from quantgate.evaluate.scheduler._pool import InlineWorker, VariantWorker, WarmCapacity
from quantgate.evaluate.scheduler._variant import VariantJob, VariantRun, with_backend_module
from quantgate.inputs._variants import Variant
from quantgate.rundir._build import case_record
from quantgate.rundir._store import RunStore
from quantgate.rundir._summary import Placement, ShardPlacement

__all__ = ["RayExecutor"]

_WAIT_S = 0.5
"""How long the driver waits for a task's next message at a time (Ctrl-C is seen in between)."""


@dataclass(kw_only=True)
class _Shards:
    """A variant whose cases were split between tasks, as the driver gathers their ends."""

    job: VariantJob
    count: int
    ended: dict[int, ShardEnded] = field(default_factory=dict)


def _label(name: str, index: int, shards: _Shards | None) -> str:
    """How progress and messages name a variant's task, or one of its shards."""
    return name if shards is None else f"{name} shard {index + 1}/{shards.count}"


@dataclass(kw_only=True)
class _Task:
    """A variant's task (or one of its shards') as the driver follows it."""

    job: VariantJob
    resources: dict[str, float]
    store: RunStore
    progress: tqdm[Any]
    attempts: int = 1
    received: list[CaseOutcome] = field(default_factory=list)
    started: TaskStarted | None = None
    shards: _Shards | None = None
    index: int = 0

    @property
    def label(self) -> str:
        return _label(self.job.variant.name, self.index, self.shards)

    def _where(self, ended_at: float | None) -> dict[str, Any]:
        """Where and when its last task ran (nothing when it never started)."""
        started = self.started
        if started is None:
            return {}
        return {
            "node_id": started.node_id,
            "node_ip": started.node_ip,
            "started_at": started.started_at,
            "ended_at": ended_at,
            "niceness": started.niceness,
        }

    def placement(self, ended_at: float | None = None) -> Placement:
        return Placement(
            executor="ray", attempts=self.attempts, resources=self.resources, **self._where(ended_at)
        )

    def shard_placement(
        self, run: VariantRun | None, error: str | None, ended_at: float | None
    ) -> ShardPlacement:
        return ShardPlacement(
            hostname=self.started.hostname if self.started else None,
            hardware=run.metadata.hardware if run else None,
            case_ids=[o.case_id for o in (*self.job.prior, *self.received)],
            attempts=self.attempts,
            error=error,
            **self._where(ended_at),
        )


class RayExecutor:
    """Evaluates variants as Ray tasks, all submitted at once (`parallel`).

    Use `RayExecutor.connect(address)`, which connects to the cluster (or starts a local one)
    and disconnects at the end. A variant that cannot cross processes (a chat model object
    given from Python) is evaluated in the driver meanwhile.

    Args:
        retries: Times a task that died is started again (for the cases it had not sent back).
        progress: Show a progress bar per task.
    """

    parallel = True
    remote = True

    def in_rounds(self, variants: Sequence[Variant], options: RunOptions) -> bool:
        """In rounds over warm actors, unless a server variant's cases are split between tasks
        (`shards`, in a run that is not sequential): then each variant is a task, evaluated whole."""
        return options.sequential or all(
            v.shards == 1 or capabilities(v).memory != "server" for v in variants
        )

    def worker(self, job: VariantJob, store: RunStore) -> VariantWorker:
        """A Ray actor on a node that has what the variant declares; a variant that cannot cross
        processes (a chat model given from Python) stays in the driver."""
        if not capabilities(job.variant).process_isolation:
            return InlineWorker(job, store)
        resources = task_resources(job.variant, self._ray.nodes())
        return ActorWorker(job, store, resources=resources, retries=self.retries)

    def warm_capacity(self, variants: Sequence[Variant]) -> WarmCapacity:
        """How many variants each node keeps loaded at once, from its own memory (`node_capacity`)."""
        return node_capacity(self._ray, variants)

    def __init__(self, *, retries: int = 1, progress: bool = True) -> None:
        import ray

        self._ray = ray
        self.retries = retries
        self.progress = progress
        self._remote = ray.remote(num_returns="streaming", max_retries=0, max_calls=1)(variant_task)
        self._call = ray.remote(max_retries=retries, max_calls=1)(call_task)

    @classmethod
    @contextmanager
    def connect(
        cls,
        address: str | None = None,
        *,
        retries: int = 1,
        progress: bool = True,
        runtime_env: dict[str, Any] | None = None,
    ) -> Iterator[RayExecutor]:
        """An executor on the Ray cluster at `address` (`auto`, `HOST:PORT`, `ray://...`), or on a
        local Ray started for the run (None); an already connected Ray is used as it is.

        Raises:
            ClusterError: Ray is not installed, or the cluster cannot be reached.
        """
        with connected(address, runtime_env=runtime_env):
            yield cls(retries=retries, progress=progress)

    def evaluate(self, jobs: Sequence[VariantJob]) -> Iterator[Evaluated]:
        """Submit a task per job, then yield each as it ends; records are written as they come."""
        ray = self._ray
        nodes = ray.nodes()
        tasks: dict[Any, _Task] = {}
        remote = [job for job in jobs if capabilities(job.variant).process_isolation]
        here = [job for job in jobs if not capabilities(job.variant).process_isolation]
        try:
            for job in remote:
                resources = task_resources(job.variant, nodes)
                why = infeasible(resources, nodes)
                if why is not None:
                    placement = Placement(executor="ray", attempts=0, resources=resources)
                    yield Evaluated(job=job, run=None, error=why, placement=placement)
                    continue
                for task in self._tasks(job, resources, position=len(tasks)):
                    tasks[self._submit(task)] = task
            yield from LocalExecutor().evaluate(here)  # in the driver, while the tasks run
            while tasks:
                ready, _ = ray.wait(list(tasks), num_returns=1, timeout=_WAIT_S)
                if ready:
                    yield from self._next_message(ready[0], tasks)
        except BaseException:  # Ctrl-C above all: no task goes on without the driver
            for generator in tasks:
                ray.cancel(generator, force=True)
            raise
        finally:
            for task in tasks.values():
                _close(task)

    def call_each(self, calls: Sequence[VariantCall[Result]]) -> Iterator[Called[Result]]:
        """Run each call as a Ray task with its variant's resources, all at once, yielding each as
        it ends; Ray starts a task that died again, up to `retries` times. A call whose variant
        cannot cross processes (a chat model given from Python) runs in the driver meanwhile."""
        ray = self._ray
        nodes = ray.nodes()
        pending: dict[Any, VariantCall[Result]] = {}
        here = [call for call in calls if not capabilities(call.variant).process_isolation]
        remote = [call for call in calls if capabilities(call.variant).process_isolation]
        progress = tqdm(total=len(calls), desc="Ray tasks", unit="variant", disable=not self.progress)
        try:
            for call in remote:
                resources = task_resources(call.variant, nodes)
                why = infeasible(resources, nodes)
                if why is not None:
                    progress.update(1)
                    yield Called(call=call, result=None, error=f"{call.what}: {why}")
                    continue
                module = backend_module(call.variant.backend)
                options = to_ray_options(resources)
                name = f"quantgate-{call.variant.name}"
                pending[
                    self._call.options(**options, name=name).remote((call.function, call.argument, module))
                ] = call
            yield from LocalExecutor().call_each(here)
            progress.update(len(here))
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=_WAIT_S)
                for ref in ready:
                    progress.update(1)
                    yield self._called(pending.pop(ref), ref)
        except BaseException:  # Ctrl-C above all: no task goes on without the driver
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        finally:
            progress.close()

    def _called(self, call: VariantCall[Result], ref: Any) -> Called[Result]:
        """A call's task that ended, as the call's result or error."""
        ray = self._ray
        try:
            returned: CallReturned = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:  # the call raised
            cause = exc.cause
            if isinstance(cause, call.failures):
                return Called(call=call, result=None, error=str(cause))
            raise RuntimeError(f"{call.what} failed in its Ray task:\n{exc}") from None
        except ray.exceptions.RayError as exc:  # the worker or its node died, or ran out of memory
            first = str(exc).splitlines()[0] if str(exc) else ""
            tries = f" after {self.retries + 1} attempts" if self.retries else ""
            return Called(
                call=call,
                result=None,
                error=f"{call.what}: its Ray task died ({type(exc).__name__}: {first}){tries}",
            )
        if self.progress:
            tqdm.write(f"quantgate: {call.what}: done on {returned.hostname}", file=sys.stderr)
        return Called(call=call, result=returned.result, error=None)

    def _tasks(self, job: VariantJob, resources: dict[str, float], *, position: int) -> list[_Task]:
        """The job's task, or its shards' (`quantgate.cluster._shards`), each with a progress bar."""
        note = why_not_split(job)
        if note is not None:
            tqdm.write(f"quantgate: variant {job.variant.name}: {note}; it runs in one task", file=sys.stderr)
        parts = shard_jobs(job)
        shards = _Shards(job=job, count=len(parts)) if len(parts) > 1 else None
        return [
            _Task(
                job=part,
                resources=resources,
                store=RunStore(job.run_dir),
                progress=self._bar(part, _label(job.variant.name, index, shards), position + index),
                shards=shards,
                index=index,
            )
            for index, part in enumerate(parts)
        ]

    def _bar(self, job: VariantJob, label: str, position: int) -> tqdm[Any]:
        return tqdm(
            total=len(job.cases),
            initial=len(job.prior),
            desc=f"{label} (waiting for a node)",
            unit="case",
            position=position,
            disable=not self.progress,
        )

    def _submit(self, task: _Task) -> Any:
        """Start the task's job on a node (its options without progress bars: the driver shows them)."""
        job = with_backend_module(task.job)
        job = replace(job, options=replace(job.options, progress=False))
        return self._remote.options(
            **to_ray_options(task.resources), name=f"quantgate-{job.variant.name}"
        ).remote(job)

    def _next_message(self, generator: Any, tasks: dict[Any, _Task]) -> Iterator[Evaluated]:
        """Take the task's next message: where it started, a case's outcome (recorded), its end."""
        ray, task = self._ray, tasks[generator]
        try:
            message = ray.get(next(generator))
        except StopIteration:
            message = TaskEnded(run=None, error="its Ray task ended without a result", ended_at=0.0)
        except ray.exceptions.RayTaskError as exc:  # raised outside the evaluation: not worth a retry
            message = TaskEnded(run=None, error=f"its Ray task failed: {exc}", ended_at=0.0)
        except ray.exceptions.RayError as exc:  # the worker or its node died, or ran out of memory
            del tasks[generator]
            yield from self._died(task, exc, tasks)
            return
        if isinstance(message, TaskStarted):
            task.started = message
            task.progress.set_description(f"{task.label} on {message.hostname}")
        elif isinstance(message, CaseOutcome):
            task.received.append(message)
            task.store.write_record(case_record(task.job.variant.name, message))
            task.progress.update(1)
        else:
            assert isinstance(message, TaskEnded)
            del tasks[generator]
            yield from _ended(task, message.run, message.error, message.ended_at or None)

    def _died(self, task: _Task, exc: Exception, tasks: dict[Any, _Task]) -> Iterator[Evaluated]:
        """Start a task that died again for the cases it had not sent, or report its variant."""
        where = f" on {task.started.hostname}" if task.started else ""
        cause = (
            f"its Ray task died{where} ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
        )
        if task.attempts > self.retries:
            tries = f" after {task.attempts} attempts" if task.attempts > 1 else ""
            yield from _ended(task, None, f"{cause}{tries}", None)
            return
        tqdm.write(
            f"quantgate: variant {task.label}: {cause}; starting it again for the cases it had not sent back "
            f"({len(task.received)} recorded; attempt {task.attempts + 1} of {self.retries + 1})",
            file=sys.stderr,
        )
        task.job = replace(task.job, prior=(*task.job.prior, *task.received))
        task.received, task.started, task.attempts = [], None, task.attempts + 1
        task.progress.set_description(f"{task.label} (waiting for a node)")
        tasks[self._submit(task)] = task


def _ended(
    task: _Task, run: VariantRun | None, error: str | None, ended_at: float | None
) -> Iterator[Evaluated]:
    """A task that ended: its variant's result, or for a shard, the variant's once every shard ended."""
    _close(task)
    shards = task.shards
    if shards is None:
        yield Evaluated(job=task.job, run=run, error=error, placement=task.placement(ended_at))
        return
    placement = task.shard_placement(run, error, ended_at)
    shards.ended[task.index] = ShardEnded(
        job=task.job, new=tuple(task.received), run=run, error=error, placement=placement
    )
    if len(shards.ended) == shards.count:
        yield merged(shards.job, [shards.ended[i] for i in range(shards.count)], task.resources)


def _close(task: _Task) -> None:
    task.progress.close()
    task.store.close()
