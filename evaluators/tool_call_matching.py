"""How a predicted record's tool calls pair with the gold record's: one call or several, in any
order, each pair's arguments scored by `evaluators.tool_arguments`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from evaluators.matchers import DEFAULT_OPTIONS, MatchOptions
from evaluators.tool_arguments import score_arguments

__all__ = [
    "MANY_FIELD",
    "ONE_FIELD",
    "CallComparison",
    "CallPair",
    "CallsComparison",
    "calls_of",
    "compare_call_lists",
    "compare_calls",
    "tool_parameters",
]

ONE_FIELD = "call"
"""The one field of a record of one call: the call, or null for no call."""
MANY_FIELD = "calls"
"""The one field of a record of several calls: the list of calls, empty for no call."""


@dataclass(frozen=True, kw_only=True)
class CallComparison:
    """One predicted call against its gold call.

    Attributes:
        gold: The gold call (`{"name": ..., "arguments": {...}}` or BFCL's form), None for "no call".
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


@dataclass(frozen=True, kw_only=True)
class CallPair:
    """A gold call paired with a predicted call to the same tool.

    Attributes:
        gold_index: The gold call's place in the gold record.
        predicted_index: The predicted call's place in the predicted record.
        name: The tool both call.
        arguments: The score in [0, 1] of every argument (`evaluators.tool_arguments`).
    """

    gold_index: int
    predicted_index: int
    name: str
    arguments: dict[str, float]

    @property
    def exact(self) -> bool:
        """Every argument matches."""
        return all(score == 1.0 for score in self.arguments.values())


@dataclass(frozen=True, kw_only=True)
class CallsComparison:
    """A predicted record's calls against the gold record's, in any order, as BFCL scores parallel
    calls: each gold call paired with a distinct predicted call to the same tool, the pairs chosen to
    maximise the argument scores (an exact pairing of every call wins when there is one).

    Attributes:
        gold: The gold calls (empty: no call is due).
        predicted: The predicted calls (empty: no call).
        no_output: The system produced no record at all.
        pairs: The paired calls.
    """

    gold: tuple[Mapping[str, Any], ...]
    predicted: tuple[Mapping[str, Any], ...]
    no_output: bool = False
    pairs: tuple[CallPair, ...] = ()

    @property
    def right_tool(self) -> bool:
        """The same tools were called as many times each (or rightly no call)."""
        names = sorted(str(c.get("name")) for c in self.gold)
        return not self.no_output and names == sorted(str(c.get("name")) for c in self.predicted)

    @property
    def exact(self) -> bool:
        """As many calls as gold, each paired with a gold call whose every argument matches."""
        return (
            self.right_tool and len(self.pairs) == len(self.gold) and all(pair.exact for pair in self.pairs)
        )


def tool_parameters(tools: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Each tool's `parameters` by its name; tools in the OpenAI format (`{"type": "function", ...}`)."""
    functions = (tool.get("function", tool) for tool in tools)
    return {str(f["name"]): f.get("parameters") or {"type": "object"} for f in functions}


def calls_of(record: Mapping[str, Any] | None) -> tuple[Mapping[str, Any], ...]:
    """The calls of a record: `{"calls": [...]}`, or `{"call": ...}` (null: none)."""
    if not isinstance(record, Mapping):
        return ()
    calls = record.get(MANY_FIELD) if MANY_FIELD in record else [record.get(ONE_FIELD)]
    return tuple(c for c in calls if isinstance(c, Mapping)) if isinstance(calls, list) else ()


def _arguments_of(call: Mapping[str, Any]) -> Mapping[str, Any]:
    arguments = call.get("arguments")
    return arguments if isinstance(arguments, Mapping) else {}


def _pairs(
    gold: Sequence[Mapping[str, Any]],
    predicted: Sequence[Mapping[str, Any]],
    parameters: Mapping[str, Mapping[str, Any]],
    options: MatchOptions,
) -> tuple[CallPair, ...]:
    scores: dict[tuple[int, int], dict[str, float]] = {}
    for i, g in enumerate(gold):
        for j, p in enumerate(predicted):
            if g.get("name") == p.get("name"):
                tool = parameters.get(str(g.get("name")), {})
                scores[i, j] = score_arguments(
                    parameters=tool, gold=g, predicted=_arguments_of(p), options=options
                )
    if not scores:
        return ()
    weights = np.zeros((len(gold), len(predicted)))
    for (i, j), arguments in scores.items():
        weights[i, j] = 1.0 + (sum(arguments.values()) / len(arguments) if arguments else 1.0)
    rows, columns = linear_sum_assignment(weights, maximize=True)
    return tuple(
        CallPair(gold_index=i, predicted_index=j, name=str(gold[i].get("name")), arguments=scores[i, j])
        for i, j in zip(rows.tolist(), columns.tolist(), strict=True)
        if (i, j) in scores
    )


def compare_call_lists(
    *,
    outputs: Mapping[str, Any] | None,
    reference_outputs: Mapping[str, Any],
    tools: Sequence[Mapping[str, Any]],
    options: MatchOptions = DEFAULT_OPTIONS,
) -> CallsComparison:
    """Compare a predicted record's calls with the gold record's (see `CallsComparison`); records
    of one call (`{"call": ...}`) are lists of at most one.

    Args:
        outputs: The predicted record, None when the system produced nothing usable.
        reference_outputs: The gold record (or the reference model's, for agreement).
        tools: The case's tools, in the OpenAI function format.
        options: Matcher tolerances.
    """
    gold = calls_of(reference_outputs)
    if outputs is None:
        return CallsComparison(gold=gold, predicted=(), no_output=True)
    predicted = calls_of(outputs)
    pairs = _pairs(gold, predicted, tool_parameters(tools), options)
    return CallsComparison(gold=gold, predicted=predicted, pairs=pairs)


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
        tools: The case's tools, in the OpenAI function format.
        options: Matcher tolerances.
    """
    compared = compare_call_lists(
        outputs=outputs, reference_outputs=reference_outputs, tools=tools, options=options
    )
    gold = _call_of(reference_outputs)
    if outputs is None:
        return CallComparison(gold=gold, predicted=None, no_output=True)
    arguments = compared.pairs[0].arguments if compared.pairs else {}
    return CallComparison(
        gold=gold, predicted=_call_of(outputs), right_tool=compared.right_tool, arguments=arguments
    )


def _call_of(record: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    call = record.get(ONE_FIELD) if isinstance(record, Mapping) else None
    return call if isinstance(call, Mapping) else None
