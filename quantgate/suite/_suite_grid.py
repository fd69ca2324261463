"""A suite's decision as a task x variant grid: each cell passes, or names the gate that fails it;
as text for the terminal and as suite_decision.md (with a section per task: each variant's gates,
the task kind's figures and token fidelity's headline, `fidelity_tail.HEADLINE`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from quantgate._formatting import text_table
from quantgate.render._decision_markdown import task_figures_section
from quantgate.render._fidelity_tail import tail_cells, tail_titles
from quantgate.render._markdown import escape_markdown, markdown_table
from quantgate.rundir._decision import Decision
from quantgate.rundir._summary import RunSummary
from quantgate.suite._suite_records import SuiteDecision, TaskVerdict

__all__ = [
    "TaskDecided",
    "fidelity_section",
    "grid_rows",
    "render_grid",
    "render_suite_markdown",
    "suite_decision_line",
]


@dataclass(frozen=True, kw_only=True)
class TaskDecided:
    """One task of a suite as decided: its kind, its decision and its run's summary (None: the
    task has no run directory, or its file could not be read)."""

    kind: str
    decision: Decision | None = None
    summary: RunSummary | None = None


def _cell(verdict: TaskVerdict | None) -> str:
    """`pass`, `not run`, or the verdict and the first gate that made it (a failing gate before an
    inconclusive one), with how many more did not pass (`+N`)."""
    if verdict is None or verdict.verdict == "not_run":
        return "not run"
    if verdict.passes:
        return "pass"
    if not verdict.failed_gates:
        return verdict.verdict
    suffix = " " + verdict.verdict
    made = [g.removesuffix(suffix) for g in verdict.failed_gates if g.endswith(suffix)]
    first = made[0] if made else verdict.failed_gates[0]
    more = len(verdict.failed_gates) - 1
    return f"{verdict.verdict}: {first}" + (f" +{more}" if more else "")


def grid_rows(decision: SuiteDecision) -> list[list[str]]:
    """The header (task, then each variant), a row per task, and the suite's row (`pass` when the
    variant passes every task, else `not all`)."""
    names = list(decision.variants)
    rows = [["task", *names]]
    for task in decision.tasks:
        rows.append([task, *(_cell(decision.variants[n].tasks.get(task)) for n in names)])
    overall = ["pass" if decision.variants[n].passes else "not all" for n in names]
    return [*rows, ["every task", *overall]]


def render_grid(decision: SuiteDecision) -> str:
    """The grid as fixed-width text."""
    return "\n".join(text_table(grid_rows(decision)))


def _decision_line(decision: SuiteDecision) -> str:
    if decision.recommended is None:
        return "no variant passes every task, not even the reference"
    if decision.outcome == "keep_reference":
        return f"keep the reference {decision.recommended}: no quantized variant passes every task"
    return f"{decision.recommended} passes every task and replaces the reference {decision.reference}"


def suite_decision_line(decision: SuiteDecision) -> str:
    """The decision in one line, with the tasks that fail each variant not recommended."""
    failing = [
        f"{name} does not pass {', '.join(v.failing_tasks)}"
        for name, v in decision.variants.items()
        if v.failing_tasks and name != decision.recommended
    ]
    return _decision_line(decision) + (f" ({'; '.join(failing)})" if failing else "")


_FIDELITY_NOTE = (
    "Token fidelity against the reference, teacher-forced on its answers (docs/token-fidelity.md); "
    "the task's decision.md has the whole tail and its slices. —: not measured."
)


def fidelity_section(summary: RunSummary | None, *, level: str = "###") -> list[str]:
    """Each variant's token fidelity headline (KLD mean and p99, the largest drop, top-1 on structural
    and value tokens) as a Markdown section; none when no variant of the run has token fidelity."""
    if summary is None or all(v.token_fidelity is None for v in summary.variants):
        return []
    rows = [
        [v.name + (" (reference)" if v.is_reference else ""), *tail_cells(v.token_fidelity)]
        for v in summary.variants
    ]
    table = markdown_table(["variant", *tail_titles()], rows)
    return [f"{level} Token fidelity", "", *table, _FIDELITY_NOTE, ""]


def _task_section(name: str, task: TaskDecided) -> list[str]:
    """A task's section: each variant's verdict and gates (their evidence gives each interval), then
    the task kind's figures and token fidelity per variant."""
    lines = [f"## Task {escape_markdown(name)} ({escape_markdown(task.kind)})", ""]
    if task.decision is None:
        return [*lines, "Not run: no decision.", ""]
    rows = []
    for variant, section in task.decision.variants.items():
        gates = [[g.gate, g.status, g.evidence] for g in section.gates] or [
            ["—", section.status, section.error or ""]
        ]
        rows += [[variant, section.verdict, *gate] for gate in gates]
    lines += markdown_table(["variant", "verdict", "gate", "status", "evidence"], rows)
    return [*lines, *task_figures_section(task.summary, level="###"), *fidelity_section(task.summary)]


def render_suite_markdown(decision: SuiteDecision, tasks: Mapping[str, TaskDecided] | None = None) -> str:
    """suite_decision.md: the decision, the grid, and a section per task of `tasks` (its gates and
    its kind's figures per variant); each task's full record is its own decision.md."""
    rows = grid_rows(decision)
    lines = [
        "# Suite decision",
        "",
        f"**{escape_markdown(suite_decision_line(decision))}** (exit status {decision.exit_status})",
        "",
    ]
    if decision.incomplete_tasks:
        names = ", ".join(decision.incomplete_tasks)
        lines += [f"> **Incomplete.** Tasks not complete when decided: {escape_markdown(names)}.", ""]
    lines += ["| " + " | ".join(map(escape_markdown, rows[0])) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(map(escape_markdown, row)) + " |" for row in rows[1:]]
    lines += ["", "Each task's own decision: `tasks/<task>/decision.md`.", ""]
    for name in decision.tasks:
        if tasks is not None and name in tasks:
            lines += _task_section(name, tasks[name])
    return "\n".join(lines)
