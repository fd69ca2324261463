"""A suite's run directory (`quantgate run --suite`, docs/suites.md) for the report and the notebook.

`quantgate report SUITE_DIR` writes each task's own report (`tasks/<task>/report/report.html`,
as `quantgate report` writes it for one run) and `SUITE_DIR/report/report.html`: the task x
variant grid of suite_decision.json (each cell its verdict, as the terminal shows it), then one
section per task: its kind, its run's status, its task figures per variant and a link to its
report. `open_task` opens one task of a suite (or a plain run) for the notebook.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from evaluators.errors import MissingInputError
from quantgate._hardware import package_version
from quantgate.analysis._run_view import RunView, load_run_view
from quantgate.analysis._task_report import task_context
from quantgate.rundir._files import REPORT_DIR, SUMMARY_FILE
from quantgate.rundir._jsonfile import read_model
from quantgate.suite._suite_grid import grid_rows, suite_decision_line
from quantgate.suite._suite_records import (
    SUITE_DECISION_JSON,
    TASKS_DIR,
    SuiteDecision,
    SuiteRun,
    read_suite,
)
from quantgate.suite._suite_records import is_suite_dir as _is_suite_dir

REPORT_HTML = "report.html"
DEFAULT_MAX_FAILURES = 1000

__all__ = ["is_suite_dir", "open_task", "suite_tasks", "write_suite_report"]


def is_suite_dir(path: str | Path) -> bool:
    """Whether `path` is a suite's run directory (it holds suite.json)."""
    return _is_suite_dir(Path(path))


def suite_tasks(suite_dir: str | Path) -> dict[str, Path]:
    """Each task of a suite, in the suite's order, and its run directory (which may not exist yet)."""
    folder = Path(suite_dir)
    return {task.name: folder / TASKS_DIR / task.name for task in read_suite(folder).tasks}


def open_task(run_dir: str | Path, task: str | None = None) -> RunView:
    """A run directory's view; for a suite's directory, that of `task` (default: its first task
    that has been run).

    Raises:
        MissingInputError: `task` is not one of the suite's, or no task of it has been run.
    """
    folder = Path(run_dir)
    if not is_suite_dir(folder):
        return load_run_view(folder)
    tasks = suite_tasks(folder)
    if task is not None and task not in tasks:
        raise MissingInputError(f"{folder}: the suite has no task {task!r} (its tasks: {', '.join(tasks)})")
    ran = [name for name, path in tasks.items() if (path / SUMMARY_FILE).is_file()]
    chosen = task if task is not None else (ran[0] if ran else None)
    if chosen is None:
        raise MissingInputError(f"{folder}: no task of the suite has been run yet")
    return load_run_view(tasks[chosen])


def _decision(folder: Path) -> SuiteDecision | None:
    path = folder / SUITE_DECISION_JSON
    return read_model(path, SuiteDecision) if path.is_file() else None


def _task_section(suite_dir: Path, name: str, kind: str, *, max_failures: int) -> dict[str, Any]:
    from quantgate.analysis._report import write_report

    run_dir = suite_dir / TASKS_DIR / name
    section: dict[str, Any] = {"name": name, "kind": kind, "status": "not run", "link": None, "task": None}
    if not (run_dir / SUMMARY_FILE).is_file():
        return section
    page = write_report(run_dir, max_failures=max_failures)
    view = load_run_view(run_dir)
    section |= {
        "status": view.run.summary.status,
        "cases": view.run.summary.dataset.cases,
        "link": page.relative_to(suite_dir).as_posix(),
        "task": task_context(view),
    }
    return section


def render_suite_report(suite: SuiteRun, decision: SuiteDecision | None, tasks: list[dict[str, Any]]) -> str:
    """The suite's page as HTML text (links are relative to SUITE_DIR/report/)."""
    environment = Environment(
        loader=PackageLoader("quantgate.analysis", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return environment.get_template("suite_report.html.j2").render(
        suite=suite,
        grid=grid_rows(decision) if decision is not None else None,
        headline=suite_decision_line(decision) if decision is not None else None,
        tasks=tasks,
        generated=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        version=package_version("quantgate"),
    )


def write_suite_report(suite_dir: str | Path, *, max_failures: int = DEFAULT_MAX_FAILURES) -> Path:
    """Write each run task's report and `SUITE_DIR/report/report.html`; return the latter's path.

    Args:
        suite_dir: A suite's run directory (decided or not; tasks not run yet are named as such).
        max_failures: At most this many case x variant entries in each task's failure browser.
    """
    folder = Path(suite_dir)
    suite = read_suite(folder)
    tasks = [_task_section(folder, t.name, t.kind, max_failures=max_failures) for t in suite.tasks]
    for section in tasks:
        if section["link"] is not None:
            section["link"] = "../" + section["link"]
    out = folder / REPORT_DIR
    out.mkdir(parents=True, exist_ok=True)
    page = out / REPORT_HTML
    page.write_text(render_suite_report(suite, _decision(folder), tasks), encoding="utf-8")
    return page
