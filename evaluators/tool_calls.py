"""Tool calling: one case's calls against its gold calls, and the task's figures over a variant's cases.

A tool-calling record is `{"call": {"name": "get_weather", "arguments": {...}}}`, or `{"call": null}`
when no tool fits (abstention); a task of several calls (`"calls": "many"`) has records
`{"calls": [CALL, ...]}`, `[]` for no call. The case scorer gives one field, `call` (or `calls`):
1.0 for the exact calls (as many as gold, each paired with a gold call to the same tool whose every
argument matches, in any order: `evaluators.tool_call_matching`) or for "no call" where gold has
none, else 0.0. How each argument is compared, for a gold call in the exact form or in BFCL's form
(acceptable values per argument), is `evaluators.tool_arguments`.

The figures follow the Berkeley Function Calling Leaderboard's: tool selection, argument accuracy
(overall and per argument), exact calls, abstention and false abstention, and whether the calls'
arguments are valid against the chosen tools' parameters; tool selection, argument accuracy and
exact calls per BFCL category too (a case's `category:NAME` tag). A figure with no case to measure
it on is None.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evaluators.fields import FieldAccuracy, FieldScore, Outcome
from evaluators.format import FormatEvaluator
from evaluators.matchers import DEFAULT_OPTIONS, MatchOptions
from evaluators.results import KindFigures
from evaluators.schema import FieldSpec
from evaluators.task_models import Task
from evaluators.tool_call_matching import (
    MANY_FIELD,
    ONE_FIELD,
    CallComparison,
    CallsComparison,
    compare_call_lists,
    compare_calls,
    tool_parameters,
)

__all__ = [
    "CallComparison",
    "CallsComparison",
    "ToolCallCategory",
    "ToolCallSummary",
    "bfcl_category",
    "compare_call_lists",
    "compare_calls",
    "score_call",
    "score_tool_call_case",
    "summarize_tool_calls",
    "task_tools",
]

_CATEGORY_TAG = "category:"


def bfcl_category(tags: Iterable[str]) -> str | None:
    """A case's BFCL category, its tag `category:NAME` (None: none)."""
    return next((t[len(_CATEGORY_TAG) :] for t in tags if t.startswith(_CATEGORY_TAG)), None)


def _outcome(comparison: CallsComparison) -> Outcome:
    if comparison.no_output:
        return "no_output"
    if comparison.exact:
        return "correct"
    if not comparison.predicted:
        return "missed"
    return "false_positive" if not comparison.gold else "wrong"


def score_call(
    *,
    outputs: Mapping[str, Any] | None,
    reference_outputs: Mapping[str, Any],
    tools: Sequence[Mapping[str, Any]],
    options: MatchOptions = DEFAULT_OPTIONS,
) -> FieldAccuracy:
    """The case score of a tool-calling record: one field, `call` (`calls` for a record of several
    calls, as the gold record has it), 1.0 for the exact calls, else 0.0.

    "No call" predicted where gold has none scores 1.0; a call where gold has none is a false
    positive, no call where gold has one a miss, and no record at all scores 0.0 (`no_output`).

    Args:
        outputs: The predicted record (`{"call": ...}` or `{"calls": [...]}`), None when the system
            produced nothing usable.
        reference_outputs: The gold record (or the reference model's, for agreement).
        tools: The case's tools, in the OpenAI function format.
        options: Matcher tolerances.
    """
    comparison = compare_call_lists(
        outputs=outputs, reference_outputs=reference_outputs, tools=tools, options=options
    )
    name = MANY_FIELD if MANY_FIELD in reference_outputs else ONE_FIELD
    score = FieldScore(
        field=name,
        score=1.0 if comparison.exact else 0.0,
        outcome=_outcome(comparison),
        expected=_calls_value(reference_outputs, name),
        predicted=_calls_value(outputs, name),
    )
    return FieldAccuracy(fields={name: score})


def _calls_value(record: Mapping[str, Any] | None, name: str) -> Any:
    """A record's call (a mapping, else None) or calls (a list, else None), as its score keeps it."""
    value = record.get(name) if isinstance(record, Mapping) else None
    return value if isinstance(value, list if name == MANY_FIELD else Mapping) else None


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


class ToolCallCategory(BaseModel):
    """The figures of one BFCL category's cases (see `ToolCallSummary`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cases: int = Field(description="Cases of the category scored.")
    tool_selection_accuracy: float | None = Field(
        default=None, description="Share of its cases with the right tools, or rightly no call."
    )
    argument_accuracy: float | None = Field(
        default=None, description="Mean argument score of its calls to the right tool."
    )
    exact_call_rate: float | None = Field(
        default=None, description="Share of its cases with the exact calls."
    )


class ToolCallSummary(KindFigures):
    """The tool-calling figures of one variant's cases (its `kind_figures` in summary.json); None
    where no case measures a figure.

    Attributes:
        tool_call_cases: Cases scored (those with no record count as wrong everywhere they count).
        tool_selection_accuracy: Share of cases with the right tools (each as many times as gold
            calls it, in any order), or rightly no call.
        argument_accuracy: Mean argument score over the arguments of the calls paired with a gold
            call to the same tool (every argument given on either side counts once).
        argument_accuracy_by_name: The same per argument, keyed `tool.argument`.
        exact_call_rate: Share of cases whose calls are exact (the case score's mean).
        abstention_accuracy: Among the cases whose gold is no call, the share with no call.
        false_abstention_rate: Among the cases whose gold is a call, the share with no call.
        schema_validity: Among the cases with a predicted call, the share whose calls' arguments
            are all valid against the chosen tools' `parameters` (a tool not offered is invalid).
        by_category: Tool selection, argument accuracy and exact calls per BFCL category (the
            cases' `category:` tags); None: no case has one.
    """

    kind: Literal["tool_calling"] = "tool_calling"
    tool_call_cases: int | None = Field(
        default=None, description="Tool-calling cases scored, including those without a record."
    )
    tool_selection_accuracy: float | None = Field(
        default=None, description="Share of cases with the right tools, or rightly no call."
    )
    argument_accuracy: float | None = Field(
        default=None, description="Mean argument score of the calls to the right tool."
    )
    argument_accuracy_by_name: dict[str, float] | None = Field(
        default=None, description="Mean argument score per argument, keyed `tool.argument`."
    )
    exact_call_rate: float | None = Field(default=None, description="Share of cases with the exact calls.")
    abstention_accuracy: float | None = Field(
        default=None, description="Share with no call, of the cases whose gold is no call."
    )
    false_abstention_rate: float | None = Field(
        default=None, description="Share with no call, of the cases whose gold is a call."
    )
    schema_validity: float | None = Field(
        default=None, description="Share of the cases whose calls' arguments are valid for their tools."
    )
    by_category: dict[str, ToolCallCategory] | None = Field(
        default=None, description="Tool selection, argument accuracy and exact calls per BFCL category."
    )


def _share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _valid_calls(calls: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> bool:
    parameters = tool_parameters(tools)
    for call in calls:
        schema, arguments = parameters.get(str(call.get("name"))), call.get("arguments", {})
        if schema is None or not isinstance(arguments, Mapping):
            return False
        if _format_evaluator(json.dumps(schema, sort_keys=True)).schema_errors(arguments):
            return False
    return True


@functools.lru_cache(maxsize=1024)
def _format_evaluator(schema_json: str) -> FormatEvaluator:
    """One validator per tool's parameters, kept: the same tools come with case after case."""
    return FormatEvaluator(schema=json.loads(schema_json))


def _argument_scores(comparisons: Sequence[CallsComparison]) -> list[float]:
    return [s for c in comparisons for pair in c.pairs for s in pair.arguments.values()]


def _by_category(
    comparisons: Sequence[CallsComparison], categories: Sequence[str | None]
) -> dict[str, ToolCallCategory] | None:
    grouped: dict[str, list[CallsComparison]] = {}
    for comparison, category in zip(comparisons, categories, strict=True):
        if category is not None:
            grouped.setdefault(category, []).append(comparison)
    if not grouped:
        return None
    return {
        name: ToolCallCategory(
            cases=len(group),
            tool_selection_accuracy=_share([c.right_tool for c in group]),
            argument_accuracy=_mean(_argument_scores(group)),
            exact_call_rate=_share([c.exact for c in group]),
        )
        for name, group in sorted(grouped.items())
    }


def summarize_tool_calls(
    *,
    outputs: Sequence[Mapping[str, Any] | None],
    reference_outputs: Sequence[Mapping[str, Any]],
    tools: Sequence[Sequence[Mapping[str, Any]]],
    options: MatchOptions = DEFAULT_OPTIONS,
    categories: Sequence[str | None] | None = None,
) -> ToolCallSummary:
    """The tool-calling figures over one variant's cases (see `ToolCallSummary`).

    Args:
        outputs: Each case's predicted record, None where the system produced nothing usable.
        reference_outputs: The gold records, in the same order.
        tools: Each case's tools, in the OpenAI function format, in the same order.
        options: Matcher tolerances.
        categories: Each case's BFCL category (`bfcl_category`), None where it has none; None:
            no case has one.
    """
    if len(outputs) != len(reference_outputs):
        raise ValueError(f"{len(outputs)} outputs for {len(reference_outputs)} gold records")
    if len(tools) != len(outputs):
        raise ValueError(f"{len(tools)} tool lists for {len(outputs)} cases")
    comparisons = [
        compare_call_lists(outputs=o, reference_outputs=r, tools=t, options=options)
        for o, r, t in zip(outputs, reference_outputs, tools, strict=True)
    ]
    by_name: dict[str, list[float]] = {}
    for c in comparisons:
        for pair in c.pairs:
            for argument, score in pair.arguments.items():
                by_name.setdefault(f"{pair.name}.{argument}", []).append(score)
    return ToolCallSummary(
        tool_call_cases=len(comparisons),
        tool_selection_accuracy=_share([c.right_tool for c in comparisons]),
        argument_accuracy=_mean(_argument_scores(comparisons)),
        argument_accuracy_by_name={name: sum(s) / len(s) for name, s in by_name.items()},
        exact_call_rate=_share([c.exact for c in comparisons]),
        abstention_accuracy=_share([c.right_tool for c in comparisons if not c.gold]),
        false_abstention_rate=_share([not c.no_output and not c.predicted for c in comparisons if c.gold]),
        schema_validity=_share(
            [_valid_calls(c.predicted, t) for c, t in zip(comparisons, tools, strict=True) if c.predicted]
        ),
        by_category=_by_category(comparisons, categories or [None] * len(comparisons)),
    )
