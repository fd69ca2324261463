"""A suite's decision as a task x variant grid: each cell passes, or names the gate that fails it;
as text for the terminal and as suite_decision.md."""

from __future__ import annotations

from quantgate.formatting import text_table
from quantgate.render.decision_markdown import escape_markdown
from quantgate.rundir.suite_files import SuiteDecision, TaskVerdict

__all__ = ["grid_rows", "render_grid", "render_suite_markdown", "suite_decision_line"]


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


def render_suite_markdown(decision: SuiteDecision) -> str:
    """suite_decision.md: the decision, the grid, and each task's decision record."""
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
    return "\n".join(lines)
