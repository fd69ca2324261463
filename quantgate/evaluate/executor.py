"""Where variants are evaluated: one after another in worker processes on this machine
(`LocalExecutor`, the default), or as tasks on a Ray cluster (`quantgate.cluster.RayExecutor`).

An executor takes variant jobs and yields each one's result as it ends. Either way the run
directory gets each case's record exactly once, as the case finishes: the local executor's
workers append them, a Ray executor's driver writes those its tasks send back.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from quantgate.backends import BackendError
from quantgate.evaluate.variant import VariantJob, VariantRun, evaluate_isolated
from quantgate.rundir.summary import Placement

__all__ = ["Evaluated", "LocalExecutor", "VariantExecutor"]


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


class VariantExecutor(Protocol):
    """Evaluates variant jobs somewhere.

    Attributes:
        parallel: Jobs given together may run at the same time (a sequential run's time
            budget is then not split between them).
    """

    parallel: bool

    def evaluate(self, jobs: Sequence[VariantJob]) -> Iterator[Evaluated]:
        """Evaluate the jobs, yielding each as it ends (in any order), its records written.

        Raises:
            KeyboardInterrupt: Ctrl-C or SIGTERM; nothing of the jobs goes on running.
        """
        ...


class LocalExecutor:
    """Each job in turn, in a fresh worker process of this machine (`evaluate_isolated`)."""

    parallel = False

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
