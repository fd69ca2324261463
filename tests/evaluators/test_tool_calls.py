"""The tool-calling case scorer and figures, against hand-computed values."""

from __future__ import annotations

from typing import Any

import pytest

from evaluators.case import CaseScorer
from evaluators.format import FormatEvaluator
from evaluators.tasks import ToolCallingTask, parse_task
from evaluators.tool_calls import (
    ToolCallSummary,
    compare_calls,
    score_call,
    summarize_tool_calls,
    task_tools,
)


def _tool(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": name, "description": name, "parameters": parameters}}


TOOLS = [
    _tool(
        "get_weather",
        {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
            "days": {"type": "integer"},
        },
        ["city"],
    ),
    _tool(
        "schedule_meeting",
        {
            "attendees": {"type": "array", "items": {"type": "string"}},
            "duration_hours": {"type": "number"},
            "location": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "room": {"type": "string"}},
            },
            "options": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
        ["attendees"],
    ),
    _tool(
        "book_flight",
        {
            "origin": {"type": "string"},
            "destination": {"type": "string"},
            "passengers": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                },
            },
        },
        ["origin", "destination"],
    ),
]


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"call": {"name": name, "arguments": arguments}}


NO_CALL: dict[str, Any] = {"call": None}
ANA = {"name": "Ana", "age": 30}
MADRID_A1 = {"city": "Madrid", "room": "A1"}


def _score(predicted: dict[str, Any] | None, gold: dict[str, Any]) -> tuple[float | None, str]:
    result = score_call(outputs=predicted, reference_outputs=gold, tools=TOOLS)
    assert list(result.fields) == ["call"]
    return result.score, result.fields["call"].outcome


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        # strings normalized (case, whitespace, trailing punctuation)
        (_call("get_weather", city=" paris."), _call("get_weather", city="Paris"), 1.0),
        # a left-out optional argument is its default ...
        (_call("get_weather", city="Paris"), _call("get_weather", city="Paris", unit="celsius"), 1.0),
        (_call("get_weather", city="Paris"), _call("get_weather", city="Paris", unit="fahrenheit"), 0.0),
        # ... and without a default it matches only its absence
        (_call("get_weather", city="Paris", days=3), _call("get_weather", city="Paris"), 0.0),
        # integers: 3.0 is 3
        (_call("get_weather", city="Paris", days=3.0), _call("get_weather", city="Paris", days=3), 1.0),
        # enums exactly
        (_call("get_weather", city="Paris", unit="Celsius"), _call("get_weather", city="Paris"), 0.0),
        # numbers within tolerance
        (
            _call("schedule_meeting", attendees=["a"], duration_hours=1.5000000001),
            _call("schedule_meeting", attendees=["a"], duration_hours=1.5),
            1.0,
        ),
        (
            _call("schedule_meeting", attendees=["a"], duration_hours=1.6),
            _call("schedule_meeting", attendees=["a"], duration_hours=1.5),
            0.0,
        ),
        # arrays of scalars as sets; one missing member fails the call
        (
            _call("schedule_meeting", attendees=["B", "a", "a"]),
            _call("schedule_meeting", attendees=["a", "b"]),
            1.0,
        ),
        (_call("schedule_meeting", attendees=["a"]), _call("schedule_meeting", attendees=["a", "b"]), 0.0),
        # nested object per sub-field
        (
            _call("schedule_meeting", attendees=["a"], location={"city": "madrid", "room": "A1"}),
            _call("schedule_meeting", attendees=["a"], location=MADRID_A1),
            1.0,
        ),
        # arrays of objects, in any order
        (
            _call(
                "book_flight", origin="MAD", destination="LIM", passengers=[ANA, {"name": "Luis", "age": 4}]
            ),
            _call(
                "book_flight", origin="MAD", destination="LIM", passengers=[{"name": "luis", "age": 4}, ANA]
            ),
            1.0,
        ),
        # an argument the matchers cannot read is equal as JSON: true is not 1
        (
            _call("schedule_meeting", attendees=["a"], options=1),
            _call("schedule_meeting", attendees=["a"], options=True),
            0.0,
        ),
        # an argument the tool does not declare
        (_call("get_weather", city="Paris", country="FR"), _call("get_weather", city="Paris"), 0.0),
        # the wrong tool
        (_call("book_flight", origin="Paris", destination="Rome"), _call("get_weather", city="Paris"), 0.0),
    ],
)
def test_a_call_scores_one_only_when_exact(predicted, gold, expected):
    assert _score(predicted, gold)[0] == expected


def test_the_outcomes_of_call_and_no_call():
    weather = _call("get_weather", city="Paris")
    assert _score(NO_CALL, NO_CALL) == (1.0, "correct")
    assert _score({}, NO_CALL) == (1.0, "correct")  # a missing key is null
    assert _score(weather, NO_CALL) == (0.0, "false_positive")
    assert _score(NO_CALL, weather) == (0.0, "missed")
    assert _score(None, weather) == (0.0, "no_output")
    assert _score(None, NO_CALL) == (0.0, "no_output")
    assert _score(_call("get_weather", city="Rome"), weather) == (0.0, "wrong")


def test_the_argument_scores_are_fractional_for_sets_and_nested_objects():
    comparison = compare_calls(
        outputs=_call("schedule_meeting", attendees=["b", "a"], location={"city": "Madrid", "room": "B2"}),
        reference_outputs=_call("schedule_meeting", attendees=["a", "b", "c"], location=MADRID_A1),
        tools=TOOLS,
    )
    # attendees: precision 2/2, recall 2/3, F1 0.8; location: city right, room wrong
    assert comparison.arguments == pytest.approx({"attendees": 0.8, "location": 0.5})
    assert comparison.right_tool
    assert not comparison.exact


SUMMARY_CASES: list[tuple[dict[str, Any] | None, dict[str, Any]]] = [
    # 1: exact (unit by its default); valid
    (_call("get_weather", city="paris"), _call("get_weather", city="Paris", unit="celsius")),
    # 2: right tool, arguments 0.8, 1.0, 0.5; valid
    (
        _call(
            "schedule_meeting",
            attendees=["b", "a"],
            duration_hours=1.5,
            location={"city": "Madrid", "room": "B2"},
        ),
        _call("schedule_meeting", attendees=["a", "b", "c"], duration_hours=1.5, location=MADRID_A1),
    ),
    # 3: wrong tool; invalid (no destination)
    (_call("book_flight", origin="Rome"), _call("get_weather", city="Rome")),
    # 4: rightly no call
    (NO_CALL, NO_CALL),
    # 5: a call where none fits; invalid (unit not in the enum)
    (_call("get_weather", city="Oslo", unit="kelvin"), NO_CALL),
    # 6: false abstention
    (NO_CALL, _call("get_weather", city="Lima")),
    # 7: no record
    (None, _call("book_flight", origin="MAD", destination="LIM")),
]


def test_the_figures_over_a_variant_s_cases():
    summary = summarize_tool_calls(
        outputs=[o for o, _ in SUMMARY_CASES],
        reference_outputs=[g for _, g in SUMMARY_CASES],
        tools=[TOOLS] * len(SUMMARY_CASES),
    )
    assert summary.tool_call_cases == 7
    assert summary.tool_selection_accuracy == pytest.approx(3 / 7)  # cases 1, 2, 4
    assert summary.argument_accuracy == pytest.approx((1 + 1 + 0.8 + 1 + 0.5) / 5)
    assert summary.argument_accuracy_by_name == pytest.approx({
        "get_weather.city": 1.0,
        "get_weather.unit": 1.0,
        "schedule_meeting.attendees": 0.8,
        "schedule_meeting.duration_hours": 1.0,
        "schedule_meeting.location": 0.5,
    })  # fmt: skip
    assert summary.exact_call_rate == pytest.approx(2 / 7)  # cases 1, 4
    assert summary.abstention_accuracy == pytest.approx(1 / 2)  # case 4 of 4 and 5
    assert summary.false_abstention_rate == pytest.approx(1 / 5)  # case 6 of 1, 2, 3, 6, 7
    assert summary.schema_validity == pytest.approx(2 / 4)  # 1 and 2 of 1, 2, 3, 5
    exact = [score_call(outputs=o, reference_outputs=g, tools=TOOLS).score for o, g in SUMMARY_CASES]
    assert summary.exact_call_rate == pytest.approx(sum(s or 0.0 for s in exact) / len(exact))


def test_a_figure_without_cases_is_none_never_zero():
    nothing = dict.fromkeys(ToolCallSummary.model_fields) | {"kind": "tool_calling"}
    assert ToolCallSummary().model_dump() == nothing  # its `kind` tag, nothing measured
    empty = summarize_tool_calls(outputs=[], reference_outputs=[], tools=[])
    assert empty == ToolCallSummary(tool_call_cases=0, argument_accuracy_by_name={})
    only_calls = summarize_tool_calls(
        outputs=[NO_CALL], reference_outputs=[_call("get_weather", city="Lima")], tools=[TOOLS]
    )
    assert only_calls.abstention_accuracy is None
    assert only_calls.argument_accuracy is None  # the right tool was never chosen
    assert only_calls.schema_validity is None  # no call was made
    assert only_calls.false_abstention_rate == 1.0
    assert only_calls.tool_selection_accuracy == 0.0


def test_a_call_to_a_tool_not_in_the_list_is_invalid():
    summary = summarize_tool_calls(
        outputs=[_call("send_email", to="x")], reference_outputs=[NO_CALL], tools=[TOOLS]
    )
    assert summary.schema_validity == 0.0


def test_the_outputs_and_the_gold_records_must_pair():
    with pytest.raises(ValueError, match="2 outputs for 1 gold records"):
        summarize_tool_calls(outputs=[NO_CALL, NO_CALL], reference_outputs=[NO_CALL], tools=[TOOLS])


def test_each_case_s_calls_are_judged_against_the_tools_offered_to_it():
    lookup = _tool("lookup", {"city": {"type": "string"}}, ["city"])  # another lookup: a city
    summary = summarize_tool_calls(
        outputs=[_call("get_weather", city="Oslo"), _call("lookup", city="Oslo")],
        reference_outputs=[_call("get_weather", city="Oslo"), _call("lookup", city="Oslo")],
        tools=[TOOLS, [lookup]],
    )
    assert summary.schema_validity == 1.0  # `lookup` is valid for the second case, which offers it
    assert summary.argument_accuracy_by_name == {"get_weather.city": 1.0, "lookup.city": 1.0}
    offered_to_neither = summarize_tool_calls(
        outputs=[_call("lookup", city="Oslo")], reference_outputs=[NO_CALL], tools=[TOOLS]
    )
    assert offered_to_neither.schema_validity == 0.0


def _task() -> ToolCallingTask:
    task = parse_task({"kind": "tool_calling", "tools": TOOLS})
    assert isinstance(task, ToolCallingTask)
    return task


def test_the_tool_calling_kind_scores_cases_with_score_call():
    task = _task()
    assert task_tools(task) == TOOLS
    scorer = CaseScorer(schema=task.record_schema(), task=task)  # the kind's scorer, as a run scores
    gold = _call("get_weather", city="Paris", unit="celsius")
    for predicted, expected in [(_call("get_weather", city="paris"), 1.0), (NO_CALL, 0.0)]:
        result = scorer.fields(outputs=predicted, reference_outputs=gold, lang=None)
        assert result.score == expected
        assert result.fields == score_call(outputs=predicted, reference_outputs=gold, tools=TOOLS).fields


def test_task_tools_refuses_another_kind():
    with pytest.raises(ValueError, match="a generation task has no tools"):
        task_tools(parse_task({"kind": "generation"}))


@pytest.mark.parametrize(
    ("record", "errors"),
    [
        (_call("get_weather", city="Paris", unit="celsius"), []),
        (NO_CALL, []),
        (_call("book_flight", origin="MAD", destination="LIM", passengers=[ANA]), []),
        (_call("send_email", to="x"), ["call"]),  # no tool of that name
        (_call("get_weather", city="Paris", unit="kelvin"), ["call"]),  # no branch fits
        (_call("get_weather"), ["call"]),
        ({"call": {"name": "get_weather", "arguments": {"city": "Paris"}, "why": "asked"}}, ["call"]),
        ({}, ["<root>"]),
    ],
)
def test_the_derived_schema_validates_calls(record, errors):
    evaluator = FormatEvaluator(schema=_task().record_schema())
    assert [problem.path for problem in evaluator.schema_errors(record)] == errors
    assert evaluator(outputs=record).valid == (not errors)
