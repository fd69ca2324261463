"""Where variants are evaluated: kept warm in worker processes on this machine (`LocalExecutor`,
the default), or in actors on a Ray cluster's nodes (`quantgate.cluster.RayExecutor`), and driven
in interleaved rounds; a Ray run of server variants split into case shards runs each as tasks.

An executor takes variant jobs and yields each one's result as it ends. Either way the run
directory gets each case's record exactly once, as the case finishes: the local executor's
workers append them, a Ray executor's driver writes those its tasks send back.

The other per-variant work (a load test, embedding a corpus) goes to the same executor as
`VariantCall`s: a function of one argument, run here (in a fresh worker process when the call
asks) or in a Ray task with the variant's resources, its result sent back.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from quantgate.backends import BackendError, backend_module
from quantgate.evaluate._options import RunOptions
from quantgate.evaluate.scheduler._pool import VariantWorker, WarmCapacity, make_worker, warm_capacity
from quantgate.evaluate.scheduler._variant import VariantJob, VariantRun, evaluate_isolated
from quantgate.evaluate.scheduler._worker import run_isolated
from quantgate.inputs._variants import Variant
from quantgate.rundir._store import RunStore
from quantgate.rundir._summary import Placement

__all__ = ["Called", "Evaluated", "LocalExecutor", "VariantCall", "VariantExecutor", "run_call"]

Result = TypeVar("Result")


@dataclass(frozen=True, kw_only=True)
class Evaluated:
    """A variant job that ended: its result, or why the variant could not be evaluated.

    Attributes:
        run: What the run keeps of the variant; None when it failed.
        error: Why it failed (its backend could not serve it, its worker or task died).
        placement: Where it was evaluated (recorded in variants.json).
    """

    job: VariantJob
    run: VariantRun | None
    error: str | None
    placement: Placement


@dataclass(frozen=True, kw_only=True)
class VariantCall(Generic[Result]):
    """One variant's piece of work that an executor may run elsewhere: `function(argument)`.

    Attributes:
        variant: Whose work it is (a Ray task declares its resources).
        function: A module-level function (it must pickle), taking `argument`.
        argument: Its one argument (it must pickle).
        what: How messages name the work (`load of variant q4`).
        isolate: Run here in a fresh worker process (the local executor), for memory figures
            of its own; a Ray task always is a fresh process.
        failures: The exceptions that mean the variant could not be served: reported as the
            call's error, the others raised.
    """

    variant: Variant
    function: Callable[[Any], Result]
    argument: Any
    what: str
    isolate: bool = False
    failures: tuple[type[Exception], ...] = (BackendError,)


def run_call(work: tuple[Callable[[Any], Result], Any, str | None]) -> Result:
    """`function(argument)` of `work`, after importing the module (its third item) that registers
    the variant's backend, so that another process (a worker, a Ray task) knows it too."""
    function, argument, module = work
    if module is not None:
        importlib.import_module(module)
    return function(argument)


@dataclass(frozen=True, kw_only=True)
class Called(Generic[Result]):
    """A call that ended: its result, or why the variant could not be served."""

    call: VariantCall[Result]
    result: Result | None
    error: str | None


class VariantExecutor(Protocol):
    """Evaluates variant jobs, and runs other per-variant work, somewhere.

    Attributes:
        parallel: Jobs given together may run at the same time (a sequential run's time
            budget is then not split between them).
        remote: Work may run on another machine, whose files are not this one's: what it
            would write must be sent back instead.
    """

    parallel: bool
    remote: bool

    def in_rounds(self, variants: Sequence[Variant], options: RunOptions) -> bool:
        """A run of these variants keeps them warm (`worker`) and evaluates them in interleaved
        rounds on the same cases (`quantgate.evaluate.scheduler._rounds`), one at a time;
        otherwise each job is evaluated whole by `evaluate`."""
        ...

    def worker(self, job: VariantJob, store: RunStore) -> VariantWorker:
        """Where a run in rounds keeps the job's variant warm."""
        ...

    def warm_capacity(self, variants: Sequence[Variant]) -> WarmCapacity:
        """How many of these variants a run in rounds may keep loaded at once on each machine."""
        ...

    def evaluate(self, jobs: Sequence[VariantJob]) -> Iterator[Evaluated]:
        """Evaluate the jobs, yielding each as it ends (in any order), its records written.

        Raises:
            KeyboardInterrupt: Ctrl-C or SIGTERM; nothing of the jobs goes on running.
        """
        ...

    def call_each(self, calls: Sequence[VariantCall[Result]]) -> Iterator[Called[Result]]:
        """Run the calls, yielding each as it ends (in any order).

        Raises:
            KeyboardInterrupt: Ctrl-C or SIGTERM; nothing of the calls goes on running.
            RuntimeError: A call raised an exception not among its `failures`.
        """
        ...


class LocalExecutor:
    """Each job in turn, in a fresh worker process of this machine (`evaluate_isolated`); a run
    keeps its variants warm here, in worker processes, and evaluates them in rounds."""

    parallel = False
    remote = False

    def in_rounds(self, variants: Sequence[Variant], options: RunOptions) -> bool:
        """Always: a run keeps its variants warm in worker processes here."""
        return True

    def worker(self, job: VariantJob, store: RunStore) -> VariantWorker:
        """A worker process here (`make_worker`), or this process for a chat model given from Python."""
        return make_worker(job, store)

    def warm_capacity(self, variants: Sequence[Variant]) -> WarmCapacity:
        """All on this machine, as many at once as fit in its available memory (`warm_capacity`)."""
        return WarmCapacity.here(warm_capacity(variants))

    def evaluate(self, jobs: Sequence[VariantJob]) -> Iterator[Evaluated]:
        """Evaluate the jobs one after another, in the order given."""
        here = Placement(executor="local")
        for job in jobs:
            try:
                run = evaluate_isolated(job)
            except BackendError as exc:
                yield Evaluated(job=job, run=None, error=str(exc), placement=here)
            else:
                yield Evaluated(job=job, run=run, error=None, placement=here)

    def call_each(self, calls: Sequence[VariantCall[Result]]) -> Iterator[Called[Result]]:
        """Run the calls one after another, in the order given."""
        for call in calls:
            name = call.variant.name
            try:
                if call.isolate:
                    work = (call.function, call.argument, backend_module(call.variant.backend))
                    result = run_isolated(run_call, work, name=f"quantgate-{name}", what=call.what)
                else:
                    result = call.function(call.argument)
            except call.failures as exc:
                yield Called(call=call, result=None, error=str(exc))
            else:
                yield Called(call=call, result=result, error=None)
