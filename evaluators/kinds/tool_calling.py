"""The tool-calling kind: a tool and its arguments for the text, or no call when none fits."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evaluators.fields import FieldScore
from evaluators.format import FormatProblem, error_path
from evaluators.kinds.kind import FigureTable, KindFigure, LabeledCase, TaskKind
from evaluators.schema import FieldSpec
from evaluators.task_models import ToolCallingTask, parse_task
from evaluators.tool_calls import ToolCallSummary, score_tool_call_case, summarize_tool_calls, task_tools
from evaluators.validation import SchemaValidator

__all__ = ["TOOL_CALLING", "show_call"]


def _call_field(record_schema: Mapping[str, Any]) -> FieldSpec:
    """Tool calling's one field, `call`: its `anyOf` is scored whole by the tool-calling scorer,
    not field by field (the field tree reads no `anyOf`); `kind` only names how it is shown."""
    call = FieldSpec(name="call", kind="string", nullable=True, description="the call, or null")
    return FieldSpec(name="", kind="object", children=(call,))


def _check(task: ToolCallingTask, expected: Mapping[str, Any]) -> list[FormatProblem]:
    if "call" not in expected:
        return [FormatProblem(path="expected.call", message="missing (null when no tool fits)")]
    call = expected["call"]
    if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
        return []  # the record schema names what is wrong with its shape
    tool = task.tool(call["name"])
    if tool is None:
        message = f"{call['name']!r} is not one of the {len(task.tools)} tools offered to the case"
        return [FormatProblem(path="expected.call.name", message=message)]
    arguments = call.get("arguments")
    errors = sorted(
        SchemaValidator(tool.parameters, format_checker=SchemaValidator.FORMAT_CHECKER).iter_errors(
            arguments
        ),
        key=lambda e: list(map(str, e.absolute_path)),
    )
    return [
        FormatProblem(
            path=error_path(e.absolute_path, "expected.call.arguments"),
            message=f"{e.message} (the parameters of {tool.name!r})",
        )
        for e in errors
    ]


def _instruction(task: ToolCallingTask, schema: Mapping[str, Any]) -> str:
    lines = ["Call the tool that does what the text asks, with its arguments, choosing from these tools:"]
    for tool in task.tools:
        function = tool.function
        description = f": {function.description}" if function.description else ""
        parameters = json.dumps(function.parameters, ensure_ascii=False)
        lines.append(f"- {function.name}{description}\n  parameters: {parameters}")
    lines.append(
        'Answer with one JSON object: {"call": {"name": "the tool\'s name", "arguments": {its parameters}}}, '
        'or {"call": null} when no tool fits.'
    )
    return "\n".join(lines)


def show_call(call: Any) -> str:
    """A tool call as one line, `name(argument=value, ...)` with JSON values; `no call` for null."""
    if call is None:
        return "no call"
    if not isinstance(call, dict):
        return json.dumps(call, ensure_ascii=False)
    arguments = call.get("arguments")
    pairs = arguments.items() if isinstance(arguments, dict) else []
    shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in pairs)
    return f"{call.get('name')}({shown})"


_CALL_FIELD = "call"
"""The one field of a tool-calling record: the call, or null for no call."""


def _calls_kept(score: FieldScore) -> bool:
    """The case's calls were kept (`keeps_values`): no outcome that needs a call lacks it (a gold of
    no call is None, so a kept and a dropped "no call" look alike; the outcomes tell them apart)."""
    gold_needed = score.outcome in ("wrong", "missed")
    predicted_needed = score.outcome in ("wrong", "false_positive")
    return not (gold_needed and score.expected is None) and not (predicted_needed and score.predicted is None)


def _figures(
    task: ToolCallingTask, cases: Sequence[LabeledCase], *, against_reference: bool
) -> ToolCallSummary | None:
    """Tool selection, argument accuracy (overall and per argument), exact calls, abstention, false
    abstention and schema validity; none when a case's calls were not kept. The calls are the `call`
    field's gold and predicted values as its score has them; a case without a valid record has no
    output."""
    scored = [case.fields[_CALL_FIELD] for case in cases]
    if not all(_calls_kept(s) for s in scored):
        return None
    shared = task_tools(task) if task.tools else []  # `"tools": []`: every case brings its own
    return summarize_tool_calls(
        outputs=[None if s.outcome == "no_output" else {_CALL_FIELD: s.predicted} for s in scored],
        reference_outputs=[{_CALL_FIELD: s.expected} for s in scored],
        tools=[shared if case.task is None else task_tools(case.task) for case in cases],
    )


_FIGURES = FigureTable(
    shown="tool calling",
    figures=(
        KindFigure(key="tool_selection_accuracy", title="tool selection"),
        KindFigure(key="argument_accuracy", title="arguments"),
        KindFigure(key="exact_call_rate", title="exact call"),
        KindFigure(key="abstention_accuracy", title="abstention"),
        KindFigure(key="false_abstention_rate", title="false abstention"),
        KindFigure(key="schema_validity", title="schema validity"),
    ),
    note="tool selection: the right tool, or rightly no call; arguments: where the right "
    "tool was called; abstention: no call where none is due; false abstention: no call where one is "
    "due; schema validity: calls whose arguments fit the tool's parameters",
)

TOOL_CALLING = TaskKind(
    model=ToolCallingTask,
    score=score_tool_call_case,
    check_expected=_check,
    scorer_module="evaluators/tool_calls.py",
    field_spec=_call_field,
    parse=parse_task,
    instruction=_instruction,
    shown_value=lambda record: show_call(record.get("call")),
    title="Tool calling",
    figures_model=ToolCallSummary,
    make_figures=_figures,
    figure_tables=(_FIGURES,),
    opener="open_tool_caller",
)
"""Tool calling: the call scored whole per case (`evaluators.tool_calls`); its figures per variant."""
