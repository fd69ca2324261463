"""Per-case tools (docs/tasks.md): a line of cases.jsonl or examples.jsonl that brings its own
`tools` has its own task (`TaskModel.for_case`: task.json's tools, a case tool replacing the task
tool of the same name, then the case's other tools). Its gold is checked against that task, and
everything that works per case is handed it (`Dataset.case_tasks`). Cases with the same tools share
one task and one check (keyed by `tool_set_key`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from evaluators.task_models import Tool, tool_set_key
from evaluators.tasks import Task
from quantgate.inputs._problems import Problem
from quantgate.inputs._task_file import ExpectedCheck

__all__ = ["CaseTasks", "offered_schema"]

_NO_TOOLS = (
    'no tools: task.json offers none ("tools": []), so every case must bring its own '
    '("tools": [{"type": "function", "function": {...}}])'
)


class _Line(Protocol):
    """A line of cases.jsonl or examples.jsonl, as far as its task goes (`Case`)."""

    @property
    def id(self) -> str: ...

    @property
    def tools(self) -> tuple[Tool, ...] | None: ...


class CaseTasks:
    """The tasks of a dataset's lines as they are read: task.json's, or a line's own when it brings
    tools; with the check of each line's gold against its task.

    Attributes:
        by_case: The task of each case and example that brings its own tools, by id.
    """

    def __init__(self, task: Task, schema: Mapping[str, Any]) -> None:
        self._task = task
        self._check = ExpectedCheck(task=task, schema=schema)
        self._shared: dict[str, tuple[Task, ExpectedCheck]] = {}
        self.by_case: dict[str, Task] = {}

    def check_of(self, case: _Line, *, file: str, line: int, problems: list[Problem]) -> ExpectedCheck | None:
        """The check of a line's gold against its task (task.json's, or its own with its `tools`);
        None when the line cannot have a task, the problem (naming the file and line) added."""
        tools = case.tools
        if not tools:
            if self._task.needs_case_tools:
                problems.append(Problem(file=file, line=line, field="tools", message=_NO_TOOLS))
                return None
            return self._check
        key = tool_set_key(tools)
        if key not in self._shared:
            try:
                task = self._task.for_case(tools)
            except ValueError as exc:
                problems.append(Problem(file=file, line=line, field="tools", message=str(exc)))
                return None
            schema = task.record_schema()
            assert schema is not None, "a kind that takes tools derives its record schema"
            self._shared[key] = (task, ExpectedCheck(task=task, schema=schema))
        task, check = self._shared[key]
        self.by_case[case.id] = task
        return check

    def of_dataset(self, kept: Iterable[str]) -> tuple[dict[str, Any], dict[str, Task]]:
        """The dataset's record schema (`offered_schema`) and its `case_tasks`: the task of each
        kept case and example by id when some case brings its own tools, else none."""
        schema = offered_schema(self._task, self._check.schema, self.by_case.values())
        if schema == self._check.schema:
            return schema, {}
        return schema, {case_id: self.by_case.get(case_id, self._task) for case_id in kept}


def offered_schema(task: Task, schema: Mapping[str, Any], case_tasks: Iterable[Task]) -> dict[str, Any]:
    """The record schema a variant is opened with: the dataset's (`schema`) when no case brings its
    own tools; else that of every tool offered anywhere (each distinct tool once), so that a backend
    that sends tools natively is opened for them. Each case's own schema is its task's."""
    tools: dict[str, Tool] = {}
    for offered in (task.offered_tools, *(t.offered_tools for t in case_tasks)):
        for tool in offered:
            tools.setdefault(tool_set_key([tool]), tool)
    if len(tools) == len(task.offered_tools):
        return dict(schema)
    union = task.model_copy(update={"tools": tuple(tools.values())}).record_schema()
    assert union is not None, "a kind that takes tools derives its record schema"
    return union
