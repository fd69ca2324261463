"""Tool calling: one case's call against its gold call, and the task's figures over a variant's cases.

A tool-calling record is `{"call": {"name": "get_weather", "arguments": {...}}}`, or `{"call": null}`
when no tool fits (abstention). The case scorer gives one field, `call`: 1.0 for the exact call (the
same tool and every argument matching) or for "no call" where gold has none, else 0.0.

Arguments are compared by the matchers of `evaluators.fields`, chosen from the argument's schema in
the tool's `parameters`: numbers within tolerance, strings normalized, enums exactly, arrays of
scalars as sets, arrays of objects item by item, nested objects per sub-field. An argument whose
schema those matchers cannot read (no `type`, an `anyOf`, an object without `properties`) or that
the tool does not declare must be equal as JSON. An argument left out is its schema's `default`
when it has one; without one it is absent, which matches only absent.

The figures follow the Berkeley Function Calling Leaderboard's: tool selection, argument accuracy
(overall and per argument), exact calls, abstention and false abstention, and whether the call's
arguments are valid against the chosen tool's parameters. A figure with no case to measure it on
is None.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from evaluators.fields import FieldAccuracy, FieldScore, Outcome, score_fields
from evaluators.format import FormatEvaluator
from evaluators.matchers import DEFAULT_OPTIONS, MatchOptions
from evaluators.results import KindFigures
from evaluators.schema import FieldSpec, SchemaSupportError, parse_schema
from evaluators.task_models import Task

__all__ = [
    "CallComparison",
    "ToolCallSummary",
    "compare_calls",
    "score_call",
    "score_tool_call_case",
    "summarize_tool_calls",
    "task_tools",
]

_ABSENT = object()
"""An argument neither given nor defaulted."""


@dataclass(frozen=True, kw_only=True)
class CallComparison:
    """One predicted call against its gold call.

    Attributes:
        gold: The gold call (`{"name": ..., "arguments": {...}}`), None for "no call".
        predicted: The predicted call, None for "no call".
        no_output: The system produced no record at all.
        right_tool: The same tool was chosen, or no call where gold has none.
        arguments: When the right tool was called, the score in [0, 1] of every argument given
            on either side (sets score their F1); empty otherwise.
    """

    gold: Mapping[str, Any] | None
    predicted: Mapping[str, Any] | None
    no_output: bool = False
    right_tool: bool = False
    arguments: dict[str, float] = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        """The right tool with every argument matching (or rightly no call)."""
        return self.right_tool and all(score == 1.0 for score in self.arguments.values())


def _tool_parameters(tools: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Each tool's `parameters` by its name; tools in the OpenAI format (`{"type": "function", ...}`)."""
    functions = (tool.get("function", tool) for tool in tools)
    return {str(f["name"]): f.get("parameters") or {"type": "object"} for f in functions}


def _call_of(record: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    call = record.get("call") if isinstance(record, Mapping) else None
    return call if isinstance(call, Mapping) else None


def _arguments_of(call: Mapping[str, Any]) -> Mapping[str, Any]:
    arguments = call.get("arguments")
    return arguments if isinstance(arguments, Mapping) else {}


@functools.lru_cache(maxsize=256)
def _argument_spec(schema_json: str) -> FieldSpec | None:
    """The field tree of one argument (under the key `value`), None when the matchers cannot read it."""
    try:
        return parse_schema({"type": "object", "properties": {"value": json.loads(schema_json)}})
    except SchemaSupportError:
        return None


def _same_json(gold: Any, predicted: Any) -> bool:
    # json.dumps tells `true` from `1`, which Python's == does not
    return json.dumps(gold, sort_keys=True) == json.dumps(predicted, sort_keys=True)


def _argument_score(schema: Any, gold: Any, predicted: Any, options: MatchOptions) -> float:
    if gold is _ABSENT or predicted is _ABSENT:
        return 1.0 if gold is predicted else 0.0
    spec = _argument_spec(json.dumps(schema, sort_keys=True)) if isinstance(schema, Mapping) else None
    if spec is None:
        return 1.0 if _same_json(gold, predicted) else 0.0
    accuracy = score_fields(
        outputs={"value": predicted}, reference_outputs={"value": gold}, schema=spec, options=options
    )
    return accuracy.score if accuracy.score is not None else 1.0


def _score_arguments(
    parameters: Mapping[str, Any],
    gold: Mapping[str, Any],
    predicted: Mapping[str, Any],
    options: MatchOptions,
) -> dict[str, float]:
    properties = parameters.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    scores: dict[str, float] = {}
    for name in dict.fromkeys([*gold, *predicted]):
        schema = properties.get(name)
        default = schema["default"] if isinstance(schema, Mapping) and "default" in schema else _ABSENT
        scores[name] = _argument_score(schema, gold.get(name, default), predicted.get(name, default), options)
    return scores


def compare_calls(
    *,
    outputs: Mapping[str, Any] | None,
    reference_outputs: Mapping[str, Any],
    tools: Sequence[Mapping[str, Any]],
    options: MatchOptions = DEFAULT_OPTIONS,
) -> CallComparison:
    """Compare a predicted record's call with the gold record's (see the module docstring).

    Args:
        outputs: The predicted record, None when the system produced nothing usable.
        reference_outputs: The gold record (or the reference model's, for agreement).
        tools: The dataset's tools, in the OpenAI function format.
        options: Matcher tolerances.
    """
    gold = _call_of(reference_outputs)
    if outputs is None:
        return CallComparison(gold=gold, predicted=None, no_output=True)
    predicted = _call_of(outputs)
    if gold is None or predicted is None:
        return CallComparison(gold=gold, predicted=predicted, right_tool=gold is None and predicted is None)
    if gold.get("name") != predicted.get("name"):
        return CallComparison(gold=gold, predicted=predicted)
    parameters = _tool_parameters(tools).get(str(gold.get("name")), {})
    arguments = _score_arguments(parameters, _arguments_of(gold), _arguments_of(predicted), options)
    return CallComparison(gold=gold, predicted=predicted, right_tool=True, arguments=arguments)


def _outcome(comparison: CallComparison) -> Outcome:
    if comparison.no_output:
        return "no_output"
    if comparison.exact:
        return "correct"
    if comparison.predicted is None:
        return "missed"
    return "false_positive" if comparison.gold is None else "wrong"


def score_call(
    *,
    outputs: Mapping[str, Any] | None,
    reference_outputs: Mapping[str, Any],
    tools: Sequence[Mapping[str, Any]],
    options: MatchOptions = DEFAULT_OPTIONS,
) -> FieldAccuracy:
    """The case score of a tool-calling record: one field `call`, 1.0 for the exact call, else 0.0.

    "No call" predicted where gold has none scores 1.0; a call where gold has none is a false
    positive, no call where gold has one a miss, and no record at all scores 0.0 (`no_output`).

    Args:
        outputs: The predicted record (`{"call": ...}`), None when the system produced nothing usable.
        reference_outputs: The gold record (or the reference model's, for agreement).
        tools: The dataset's tools, in the OpenAI function format.
        options: Matcher tolerances.
    """
    comparison = compare_calls(
        outputs=outputs, reference_outputs=reference_outputs, tools=tools, options=options
    )
    score = FieldScore(
        field="call",
        score=1.0 if comparison.exact else 0.0,
        outcome=_outcome(comparison),
        expected=comparison.gold,
        predicted=comparison.predicted,
    )
    return FieldAccuracy(fields={"call": score})


def task_tools(task: Task) -> list[dict[str, Any]]:
    """The tools a task offers to call (`TaskModel.offered_tools`, tool calling's) as JSON values,
    in the OpenAI function format.

    Raises:
        ValueError: The task offers no tools (a caller's mistake).
    """
    if not task.offered_tools:
        raise ValueError(f"a {task.kind} task has no tools")
    return [tool.model_dump() for tool in task.offered_tools]


def score_tool_call_case(
    *,
    outputs: Mapping[str, Any],
    reference_outputs: Mapping[str, Any],
    task: Task,
    spec: FieldSpec,
    options: MatchOptions,
    lang: str | None,
) -> FieldAccuracy:
    """`score_call` as the tool-calling kind's case scorer (`evaluators.kinds.CaseFieldScorer`):
    the tools are the task's, `spec` (the one field `call`) and `lang` are not needed."""
    return score_call(
        outputs=outputs, reference_outputs=reference_outputs, tools=task_tools(task), options=options
    )


class ToolCallSummary(KindFigures):
    """The tool-calling figures of one variant's cases (its `kind_figures` in summary.json); None
    where no case measures a figure.

    Attributes:
        tool_call_cases: Cases scored (those with no record count as wrong everywhere they count).
        tool_selection_accuracy: Share of cases with the right tool, or rightly no call.
        argument_accuracy: Mean argument score over the arguments of the cases where the right
            tool was called (every argument given on either side counts once).
        argument_accuracy_by_name: The same per argument, keyed `tool.argument`.
        exact_call_rate: Share of cases whose call is exact (the case score's mean).
        abstention_accuracy: Among the cases whose gold is no call, the share with no call.
        false_abstention_rate: Among the cases whose gold is a call, the share with no call.
        schema_validity: Among the cases with a predicted call, the share whose arguments are valid
            against the chosen tool's `parameters` (a tool not in the list is invalid).
    """

    kind: Literal["tool_calling"] = "tool_calling"
    tool_call_cases: int | None = Field(
        default=None, description="Tool-calling cases scored, including those without a record."
    )
    tool_selection_accuracy: float | None = Field(
        default=None, description="Share of cases with the right tool, or rightly no call."
    )
    argument_accuracy: float | None = Field(
        default=None, description="Mean argument score where the right tool was called."
    )
    argument_accuracy_by_name: dict[str, float] | None = Field(
        default=None, description="Mean argument score per argument, keyed `tool.argument`."
    )
    exact_call_rate: float | None = Field(default=None, description="Share of cases with the exact call.")
    abstention_accuracy: float | None = Field(
        default=None, description="Share with no call, of the cases whose gold is no call."
    )
    false_abstention_rate: float | None = Field(
        default=None, description="Share with no call, of the cases whose gold is a call."
    )
    schema_validity: float | None = Field(
        default=None, description="Share of the calls whose arguments are valid for the chosen tool."
    )


def _share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _valid_call(call: Mapping[str, Any], evaluators: Mapping[str, FormatEvaluator]) -> bool:
    evaluator = evaluators.get(str(call.get("name")))
    arguments = call.get("arguments", {})
    return evaluator is not None and isinstance(arguments, Mapping) and not evaluator.schema_errors(arguments)


@functools.lru_cache(maxsize=256)
def _parameters_evaluators(tools_json: str) -> dict[str, FormatEvaluator]:
    tools = json.loads(tools_json)
    return {name: FormatEvaluator(schema=p) for name, p in _tool_parameters(tools).items()}


def _evaluators(tools: Sequence[Mapping[str, Any]]) -> dict[str, FormatEvaluator]:
    """A validator of each tool's parameters by its name, built once per tool list."""
    return _parameters_evaluators(json.dumps(tools, sort_keys=True))


def summarize_tool_calls(
    *,
    outputs: Sequence[Mapping[str, Any] | None],
    reference_outputs: Sequence[Mapping[str, Any]],
    tools: Sequence[Sequence[Mapping[str, Any]]],
    options: MatchOptions = DEFAULT_OPTIONS,
) -> ToolCallSummary:
    """The tool-calling figures over one variant's cases (see `ToolCallSummary`).

    Args:
        outputs: Each case's predicted record, None where the system produced nothing usable.
        reference_outputs: The gold records, in the same order.
        tools: The tools offered to each case, in the same order, in the OpenAI function format.
        options: Matcher tolerances.
    """
    if not len(outputs) == len(reference_outputs) == len(tools):
        raise ValueError(
            f"{len(outputs)} outputs for {len(reference_outputs)} gold records and {len(tools)} tool lists"
        )
    comparisons = [
        compare_calls(outputs=o, reference_outputs=r, tools=t, options=options)
        for o, r, t in zip(outputs, reference_outputs, tools, strict=True)
    ]
    by_name: dict[str, list[float]] = {}
    for c in comparisons:
        for argument, score in c.arguments.items():
            by_name.setdefault(f"{(c.gold or {}).get('name')}.{argument}", []).append(score)
    validity = [
        _valid_call(c.predicted, _evaluators(t))
        for c, t in zip(comparisons, tools, strict=True)
        if c.predicted is not None
    ]
    return ToolCallSummary(
        tool_call_cases=len(comparisons),
        tool_selection_accuracy=_share([c.right_tool for c in comparisons]),
        argument_accuracy=_mean([s for c in comparisons for s in c.arguments.values()]),
        argument_accuracy_by_name={name: sum(s) / len(s) for name, s in by_name.items()},
        exact_call_rate=_share([c.exact for c in comparisons]),
        abstention_accuracy=_share([c.right_tool for c in comparisons if c.gold is None]),
        false_abstention_rate=_share(
            [not c.no_output and c.predicted is None for c in comparisons if c.gold is not None]
        ),
        schema_validity=_share(validity),
    )
