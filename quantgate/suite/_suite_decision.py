"""A suite's decision: each task decided as a run of its own, then a variant passes only if it
passes every task; the recommendation is the smallest variant passing every task, ranked as a
single run's decision ranks (`recommend`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evaluators.errors import QuantgateError, UsageError
from quantgate.decide._recommendation import DecisionError, decide, recommend
from quantgate.inputs._gates import Gates, GatesError, load_gates
from quantgate.inputs._prices import Prices
from quantgate.rundir._completeness import run_completeness
from quantgate.rundir._decision import EXIT_STATUS, Decision, VariantDecision, outcome_of
from quantgate.rundir._jsonfile import write_model
from quantgate.rundir._store import read_summary
from quantgate.suite._suite_grid import TaskDecided, render_suite_markdown
from quantgate.suite._suite_records import (
    SUITE_DECISION_JSON,
    SUITE_DECISION_MD,
    TASKS_DIR,
    SuiteDecision,
    SuiteRun,
    SuiteTaskEntry,
    SuiteVariantDecision,
    TaskVerdict,
    read_suite,
)

__all__ = ["decide_suite", "incomplete_tasks", "task_gates"]


def task_gates(entry: SuiteTaskEntry, *, gates_file: str | None, overrides: dict[str, Any]) -> Gates:
    """The gates a task is judged by: `gates_file` if given, else the task's own (suite.json), with
    the command line's values on top.

    Raises:
        GatesError: The gates file or a value cannot be used.
    """
    base = load_gates(gates_file) if gates_file is not None else entry.gates
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Gates.model_validate({**base.model_dump(), **given})
    except ValidationError as exc:
        raise GatesError(f"task {entry.name!r}: command-line gates: {exc.errors()[0]['msg']}") from None


def incomplete_tasks(suite_dir: Path, suite: SuiteRun | None = None) -> list[str]:
    """The tasks whose run directory is missing or does not hold the whole run, in the suite's order."""
    suite = suite or read_suite(suite_dir)
    missing = []
    for entry in suite.tasks:
        task_dir = suite_dir / TASKS_DIR / entry.name
        if not task_dir.is_dir() or not run_completeness(task_dir).complete:
            missing.append(entry.name)
    return missing


def _task_verdict(section: VariantDecision | None) -> TaskVerdict:
    if section is None:
        return TaskVerdict(verdict="not_run", passes=False)
    failed = [f"{g.gate} {g.status}" for g in section.gates if g.status != "pass"]
    if section.status != "ok":
        failed = [f"skipped: {section.error or 'not evaluated'}"]
    return TaskVerdict(verdict=section.verdict, passes=section.passes, failed_gates=failed)


def _variant(name: str, suite: SuiteRun, decisions: dict[str, Decision]) -> SuiteVariantDecision:
    sections = {task: d.variants.get(name) for task, d in decisions.items()}
    verdicts = {e.name: _task_verdict(sections.get(e.name)) for e in suite.tasks}
    footprints = [s.footprint_mb for s in sections.values() if s is not None and s.footprint_mb is not None]
    failing = [task for task, verdict in verdicts.items() if not verdict.passes]
    return SuiteVariantDecision(
        passes=not failing,
        is_reference=name == suite.reference,
        footprint_mb=max(footprints) if footprints else None,
        failing_tasks=failing,
        tasks=verdicts,
    )


def decide_suite(
    suite_dir: str | Path,
    *,
    gates_file: str | None = None,
    gate_overrides: dict[str, Any] | None = None,
    prices: Prices | None = None,
    decide_task: Callable[[str, Path, Gates], Decision] | None = None,
) -> SuiteDecision:
    """Decide each task's run (its decision.json/.md, as `quantgate decide`), then the suite;
    write suite_decision.json and suite_decision.md.

    A task whose run directory is missing counts as failed by every variant (`not_run`); an
    incomplete one is decided on what it holds. Both are listed in `incomplete_tasks`.

    Args:
        suite_dir: The suite's run directory.
        gates_file: Gates for every task instead of each task's own.
        gate_overrides: Gate values applied on top of every task's gates.
        prices: A team's prices, for each task's cost table (the suite ranks by footprint).
        decide_task: Decides one task's run (name, directory, gates); default `decide`, which
            writes the task's decision.json/.md (the command line's also prints its verdicts).

    Raises:
        RunFileError: suite.json cannot be read.
    """
    suite_dir = Path(suite_dir)
    suite = read_suite(suite_dir)
    decisions: dict[str, Decision] = {}
    for entry in suite.tasks:
        task_dir = suite_dir / TASKS_DIR / entry.name
        if task_dir.is_dir():
            gates = task_gates(entry, gates_file=gates_file, overrides=gate_overrides or {})
            try:
                decisions[entry.name] = (
                    decide_task(entry.name, task_dir, gates)
                    if decide_task is not None
                    else decide(task_dir, gates, prices=prices)
                )
            except QuantgateError as exc:  # the same kind of error, naming the task
                kind = UsageError if isinstance(exc, UsageError) else DecisionError
                raise kind(f"{task_dir}: task {entry.name!r}: {exc}") from exc
    variants = {name: _variant(name, suite, decisions) for name in suite.variants}
    chosen = recommend((name, v.passes, v.footprint_mb) for name, v in variants.items())
    outcome = outcome_of(chosen, suite.reference)
    decision = SuiteDecision(
        recommended=chosen,
        outcome=outcome,
        exit_status=EXIT_STATUS[outcome],
        reference=suite.reference,
        tasks=[e.name for e in suite.tasks],
        incomplete_tasks=incomplete_tasks(suite_dir, suite),
        variants=variants,
        decided_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )
    write_model(suite_dir / SUITE_DECISION_JSON, decision)
    tasks = {e.name: _task_decided(e, suite_dir, decisions.get(e.name)) for e in suite.tasks}
    (suite_dir / SUITE_DECISION_MD).write_text(render_suite_markdown(decision, tasks), encoding="utf-8")
    return decision


def _task_decided(entry: SuiteTaskEntry, suite_dir: Path, decision: Decision | None) -> TaskDecided:
    """A task's decision and summary, for its section of suite_decision.md."""
    try:
        summary = read_summary(suite_dir / TASKS_DIR / entry.name) if decision is not None else None
    except QuantgateError:  # decided on what it held; its section shows no figures
        summary = None
    return TaskDecided(kind=entry.kind, decision=decision, summary=summary)
