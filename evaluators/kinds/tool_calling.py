"""The tool-calling kind: a tool and its arguments for the text, or no call when none fits."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evaluators.fields import FieldScore
from evaluators.format import FormatProblem, error_path
from evaluators.kinds.kind import FigureTable, KindFigure, LabeledCase, TaskKind
from evaluators.schema import FieldSpec
from evaluators.task_models import ToolCallingTask, ToolFunction, parse_task
from evaluators.tool_arguments import ACCEPTABLE
from evaluators.tool_call_matching import MANY_FIELD, ONE_FIELD, calls_of
from evaluators.tool_calls import (
    ToolCallSummary,
    bfcl_category,
    score_tool_call_case,
    summarize_tool_calls,
    task_tools,
)
from evaluators.validation import SchemaValidator

__all__ = ["TOOL_CALLING", "show_call"]


def _call_field(record_schema: Mapping[str, Any]) -> FieldSpec:
    """Tool calling's one field, `call` (`calls` with several calls): scored whole by the
    tool-calling scorer, not field by field (the field tree reads no `anyOf`); `kind` only names
    how it is shown."""
    name = next(iter(record_schema.get("properties") or {ONE_FIELD: None}))
    call = FieldSpec(name=name, kind="string", nullable=True, description="the calls, or none")
    return FieldSpec(name="", kind="object", children=(call,))


def _exact_problems(tool: ToolFunction, call: Mapping[str, Any], path: str) -> list[FormatProblem]:
    errors = sorted(
        SchemaValidator(tool.parameters, format_checker=SchemaValidator.FORMAT_CHECKER).iter_errors(
            call.get("arguments")
        ),
        key=lambda e: list(map(str, e.absolute_path)),
    )
    return [
        FormatProblem(
            path=error_path(e.absolute_path, f"{path}.arguments"),
            message=f"{e.message} (the parameters of {tool.name!r})",
        )
        for e in errors
    ]


def _bfcl_problems(tool: ToolFunction, call: Mapping[str, Any], path: str) -> list[FormatProblem]:
    """A gold call in BFCL's form: `acceptable` an object of non-empty lists, each argument declared
    by the tool (or one that may only be left out, its list holding `""`, as a few of BFCL's have);
    the values are not checked against the schema (BFCL's "variable" rule accepts other types)."""
    if set(call) - {"name", ACCEPTABLE}:
        extra = ", ".join(sorted(set(call) - {"name", ACCEPTABLE}))
        return [
            FormatProblem(path=path, message=f"a gold call has `name` and `acceptable`, not also {extra}")
        ]
    acceptable = call[ACCEPTABLE]
    if not isinstance(acceptable, Mapping):
        return [
            FormatProblem(
                path=f"{path}.acceptable", message="must be an object of lists of acceptable values"
            )
        ]
    properties = tool.parameters.get("properties") or {}
    problems = []
    for name, values in acceptable.items():
        where = f"{path}.acceptable.{name}"
        if not isinstance(values, list) or not values:
            problems.append(
                FormatProblem(path=where, message='must be a non-empty list ("" in it: may be left out)')
            )
        elif name not in properties and "" not in values:
            problems.append(FormatProblem(path=where, message=f"not a parameter of {tool.name!r}"))
    return problems


def _call_problems(task: ToolCallingTask, call: Any, path: str) -> list[FormatProblem]:
    if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
        if ACCEPTABLE in (call or {}):
            return [FormatProblem(path=f"{path}.name", message="missing: the tool's name")]
        return []  # the record schema names what is wrong with its shape
    tool = task.tool(call["name"])
    if tool is None:
        message = f"{call['name']!r} is not one of the {len(task.tools)} tools offered to the case"
        return [FormatProblem(path=f"{path}.name", message=message)]
    if ACCEPTABLE in call:
        return _bfcl_problems(tool, call, path)
    return _exact_problems(tool, call, path)


def _check(task: ToolCallingTask, expected: Mapping[str, Any]) -> list[FormatProblem]:
    field = MANY_FIELD if task.calls == "many" else ONE_FIELD
    if field not in expected:
        what = "a list, empty when no tool fits" if task.calls == "many" else "null when no tool fits"
        return [FormatProblem(path=f"expected.{field}", message=f"missing ({what})")]
    if task.calls == "one":
        return _call_problems(task, expected[ONE_FIELD], "expected.call")
    calls = expected[MANY_FIELD]
    if not isinstance(calls, list):
        return []  # the record schema says it must be an array
    return [p for i, call in enumerate(calls) for p in _call_problems(task, call, f"expected.calls[{i}]")]


def _gold_in_record_shape(expected: Mapping[str, Any]) -> bool:
    """Whether the record schema can check the gold: not when a gold call is in BFCL's form, which
    `_check` checks whole."""
    return not any(ACCEPTABLE in call for call in calls_of(expected))


def _instruction(task: ToolCallingTask, schema: Mapping[str, Any]) -> str:
    lines = ["Call the tool that does what the text asks, with its arguments, choosing from these tools:"]
    for tool in task.tools:
        function = tool.function
        description = f": {function.description}" if function.description else ""
        parameters = json.dumps(function.parameters, ensure_ascii=False)
        lines.append(f"- {function.name}{description}\n  parameters: {parameters}")
    call = '{"name": "the tool\'s name", "arguments": {its parameters}}'
    if task.calls == "many":
        lines.append(
            f'Answer with one JSON object: {{"calls": [{call}, ...]}}, one call per action the text asks '
            'for, or {"calls": []} when no tool fits.'
        )
    else:
        lines.append(
            f'Answer with one JSON object: {{"call": {call}}}, or {{"call": null}} when no tool fits.'
        )
    return "\n".join(lines)


def show_call(call: Any) -> str:
    """A tool call as one line, `name(argument=value, ...)` with JSON values; `no call` for null. A
    gold call in BFCL's form shows each argument's acceptable values, `argument∈[value, ...]`."""
    if call is None:
        return "no call"
    if not isinstance(call, dict):
        return json.dumps(call, ensure_ascii=False)
    sign, arguments = ("∈", call.get(ACCEPTABLE)) if ACCEPTABLE in call else ("=", call.get("arguments"))
    pairs = arguments.items() if isinstance(arguments, dict) else []
    shown = ", ".join(f"{k}{sign}{json.dumps(v, ensure_ascii=False)}" for k, v in pairs)
    return f"{call.get('name')}({shown})"


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
    abstention and schema validity, and per BFCL category; none when a case's calls were not kept.
    The calls are the `call` (`calls`) field's gold and predicted values as its score has them; a
    case without a valid record has no output. Each case is given its own tools (the task's when it
    brings none)."""
    field = MANY_FIELD if task.calls == "many" else ONE_FIELD
    scored = [case.fields[field] for case in cases]
    if not all(_calls_kept(s) for s in scored):
        return None
    shared = task_tools(task) if task.tools else []  # `"tools": []`: every case brings its own
    return summarize_tool_calls(
        outputs=[None if s.outcome == "no_output" else {field: s.predicted} for s in scored],
        reference_outputs=[{field: s.expected} for s in scored],
        tools=[shared if case.task is None else task_tools(case.task) for case in cases],
        categories=[bfcl_category(case.tags) for case in cases],
    )


def _shown_calls(record: Mapping[str, Any]) -> str:
    """A record's calls as `show_call` writes them, `; ` between calls of a record of several."""
    if MANY_FIELD not in record:
        return show_call(record.get(ONE_FIELD))
    calls = record[MANY_FIELD]
    if not isinstance(calls, list):
        return show_call(calls)
    return "; ".join(map(show_call, calls)) or "no call"


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
    shown_value=_shown_calls,
    gold_in_record_shape=_gold_in_record_shape,
    title="Tool calling",
    figures_model=ToolCallSummary,
    make_figures=_figures,
    figure_tables=(_FIGURES,),
    opener="open_tool_caller",
)
"""Tool calling: the call scored whole per case (`evaluators.tool_calls`); its figures per variant."""
