"""Shared code asks a task what it offers (`TaskModel.label_set`, `single_label_set`,
`offered_tools`), never which kind it is: two toy kinds defined here answer those questions and the
shared code follows them, and no module outside `evaluators/kinds/` tests a task's type or compares
a kind's name."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import pytest
from langchain_core.messages import AIMessage

from evaluators.kinds import TASK_KINDS
from evaluators.task_models import LabelSet, TaskModel, Tool, ToolFunction
from evaluators.tool_calls import task_tools
from graphs.extraction import ExtractionResult
from graphs.prompting import NATIVE_TOOL_INSTRUCTION, build_messages, native_tool_prompt, native_tools_text
from quantgate.analysis._task_view import label_confusion
from quantgate.production._kind_openers import _classification

ROOT = Path(__file__).resolve().parents[2]
SHARED = ("quantgate", "graphs", "evaluators")
KINDS_OWN = ROOT / "evaluators" / "kinds"


class MoodTask(TaskModel):
    """A toy kind whose records pick one mood of a closed set, in the field `mood`."""

    kind: Literal["mood"] = "mood"
    moods: tuple[str, ...] = ("happy", "sad")

    @property
    def label_set(self) -> LabelSet:
        return LabelSet(field="mood", labels=self.moods)


class HelpDeskTask(TaskModel):
    """A toy kind that offers its actions as tools to call."""

    kind: Literal["help_desk"] = "help_desk"
    actions: tuple[Tool, ...]

    @property
    def offered_tools(self) -> tuple[Tool, ...]:
        return self.actions


TICKET = Tool(
    function=ToolFunction(
        name="open_ticket",
        description="Open a support ticket.",
        parameters={"type": "object", "properties": {"topic": {"type": "string"}}},
    )
)


def test_a_toy_kind_that_offers_tools_gets_the_native_tool_prompt():
    task: Any = HelpDeskTask(actions=(TICKET,))
    call = {"name": "open_ticket", "arguments": {"topic": "login"}}
    messages = build_messages(
        schema={}, examples=[("I cannot log in", {"call": call})], text="case", task=task, native_tools=True
    )
    assert messages[0].content == NATIVE_TOOL_INSTRUCTION
    example = messages[2]
    assert isinstance(example, AIMessage)
    assert [(c["name"], c["args"]) for c in example.tool_calls] == [("open_ticket", {"topic": "login"})]
    assert native_tools_text(task, True) == json.dumps([TICKET.model_dump()], ensure_ascii=False)
    assert native_tools_text(task, False) == ""
    assert task_tools(task) == [TICKET.model_dump()]


def test_a_toy_kind_without_tools_gets_no_native_tool_prompt():
    task: Any = MoodTask()
    assert native_tool_prompt(task, True) is False
    assert native_tools_text(task, True) == ""
    with pytest.raises(ValueError, match="a mood task has no tools"):
        task_tools(task)


def _record(value: str | None) -> SimpleNamespace:
    return SimpleNamespace(record=None if value is None else {"mood": value})


def test_a_toy_kinds_label_set_gives_its_confusion_matrix():
    task: Any = MoodTask()
    assert task.single_label_set == LabelSet(field="mood", labels=("happy", "sad"))
    view: Any = SimpleNamespace(
        dataset=SimpleNamespace(task=task),
        reference="R",
        records={
            "R": {"c0": _record("happy"), "c1": _record("sad"), "c2": _record("sad")},
            "Q": {"c0": _record("happy"), "c1": _record("happy"), "c2": _record(None)},
        },
    )
    confusion = label_confusion(view, "Q")
    assert list(confusion.index) == list(confusion.columns) == ["happy", "sad", "no answer"]
    assert confusion.to_numpy().tolist() == [[1, 0, 0], [1, 0, 1], [0, 0, 0]]


def test_a_toy_kinds_label_set_gives_its_production_answer():
    to_answer = _classification(MoodTask())  # type: ignore[arg-type]  # a toy kind is no built-in `Task`
    answer = to_answer(ExtractionResult(record={"mood": "sad"}, valid=True), True)
    assert (answer.label, answer.labels) == ("sad", None)
    with pytest.raises(TypeError, match="closed label set is needed, not help_desk"):
        _classification(HelpDeskTask(actions=(TICKET,)))  # type: ignore[arg-type]


TASK_MODELS = {kind.model.__name__ for kind in TASK_KINDS.values()}
KIND_NAMES = set(TASK_KINDS)


def _names(node: ast.expr) -> list[str]:
    """The class names in an `isinstance` second argument (a name, `module.Name`, or a tuple)."""
    if isinstance(node, ast.Tuple):
        return [name for element in node.elts for name in _names(element)]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    return [node.id] if isinstance(node, ast.Name) else []


def _constants(node: ast.expr) -> list[object]:
    """A compared operand's constants (a tuple, list or set of them too)."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [c for element in node.elts for c in _constants(element)]
    return [node.value] if isinstance(node, ast.Constant) else []


def kind_tests(source: str) -> list[str]:
    """The lines of `source` that test a task's type (`isinstance(task, ClassificationTask)`) or
    compare something with a task kind's name (`task.kind != "tool_calling"`, `case "generation":`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            if len(node.args) == 2 and TASK_MODELS & set(_names(node.args[1])):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if KIND_NAMES & {c for operand in operands for c in _constants(operand) if isinstance(c, str)}:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.MatchValue) and KIND_NAMES & set(_constants(node.value)):
            found.append(f"{node.lineno}: case {ast.unparse(node.value)}")
    return found


def test_the_kind_test_finder_finds_what_it_looks_for():
    source = (
        "if isinstance(task, ClassificationTask) or isinstance(t, (int, m.ToolCallingTask)):\n    pass\n"
        "if task.kind != 'tool_calling' or kind in ('generation', 'x'):\n    pass\n"
        "match task.kind:\n    case 'extraction':\n        pass\n"
        "if failure.kind == 'backend_error' or isinstance(x, Tool) or fmt == 'json_schema':\n    pass\n"
    )
    assert sorted(line.split(":")[0] for line in kind_tests(source)) == ["1", "1", "3", "3", "6"]


def test_no_shared_module_tests_a_tasks_kind():
    found = {
        str(path.relative_to(ROOT)): lines
        for package in SHARED
        for path in sorted((ROOT / package).rglob("*.py"))
        if not path.is_relative_to(KINDS_OWN) and (lines := kind_tests(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_no_template_compares_a_kinds_name():
    names = "|".join(sorted(KIND_NAMES))
    compared = re.compile(rf"""(==|!=|\bin)\s*\(?\s*["']({names})["']""")
    found = {
        str(path.relative_to(ROOT)): [m.group(0) for m in compared.finditer(path.read_text(encoding="utf-8"))]
        for path in sorted((ROOT / "quantgate").rglob("*.j2"))
    }
    assert {name: hits for name, hits in found.items() if hits} == {}
    assert found  # the report's template was read
