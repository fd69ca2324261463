"""The decided runs a directory holds: a run's own, or each task's of a suite, read through
their models, for the exporters (JUnit XML, MLflow)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evaluators.errors import MissingInputError
from quantgate.rundir._decision import Decision
from quantgate.rundir._files import DECISION_JSON
from quantgate.rundir._store import read_decision, read_summary
from quantgate.rundir._summary import RunSummary
from quantgate.suite._suite_records import TASKS_DIR, is_suite_dir, read_suite


@dataclass(frozen=True, kw_only=True)
class DecidedRun:
    """One decided run directory.

    Attributes:
        name: The task's name in a suite, else the run's id.
        run_dir: The run directory.
        decision: Its decision.json.
        summary: Its summary.json.
        task: The task's name when the run is one task of a suite, else None.
    """

    name: str
    run_dir: Path
    decision: Decision
    summary: RunSummary
    task: str | None = None


def decided_runs(path: Path) -> list[DecidedRun]:
    """The decided runs at `path`: the run itself, or each task of a suite that has a decision.

    Raises:
        MissingInputError: `path` holds no decision (not decided yet, or no task decided).
    """
    path = Path(path)
    if is_suite_dir(path):
        tasks = [(entry.name, path / TASKS_DIR / entry.name) for entry in read_suite(path).tasks]
        runs = [_decided(d, task=name) for name, d in tasks if (d / DECISION_JSON).is_file()]
        if not runs:
            raise MissingInputError(f"{path}: no task of the suite has a {DECISION_JSON}; decide it first")
        return runs
    if not (path / DECISION_JSON).is_file():
        raise MissingInputError(f"{path}: no {DECISION_JSON}; decide the run first (quantgate decide {path})")
    return [_decided(path, task=None)]


def _decided(run_dir: Path, *, task: str | None) -> DecidedRun:
    decision = read_decision(run_dir)
    return DecidedRun(
        name=task or decision.record.run_id,
        run_dir=run_dir,
        decision=decision,
        summary=read_summary(run_dir),
        task=task,
    )
