"""The prompt of each task kind; extraction's is unchanged by task kinds (the reference cache
keys on the prompt prefix)."""

import json
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from evaluators.tasks import ClassificationTask, ExtractionTask, GenerationTask, ToolCallingTask, parse_task
from graphs.prompting import (
    NATIVE_TOOL_INSTRUCTION,
    NO_TOOL_ANSWER,
    build_messages,
    native_tools_text,
    prompt_text,
    repair_message,
    repair_turn,
)
from tests.fakes import GOOD, SCHEMA

EXTRACTION_PROMPT = (
    "Extract a Invoice from the text as one JSON object with these fields. Use null (or [] for lists) when "
    "the text does not give a value; copy values as written unless the field says how to convert them.\n"
    "- vendor (text, or null): Who issued it\n"
    "- total (a number, or null): Total amount\n"
    "- issued (a date as YYYY-MM-DD, or null)\n"
    '- currency (one of "EUR", "USD", null, or null)'
)
"""The extraction instruction as it was before task kinds, byte for byte."""


def test_the_extraction_prompt_is_the_same_with_or_without_its_task():
    plain = build_messages(schema=SCHEMA, examples=[("example", GOOD)], text="case")
    tasked = build_messages(schema=SCHEMA, examples=[("example", GOOD)], text="case", task=ExtractionTask())
    assert plain == tasked
    assert plain[0] == SystemMessage(content=EXTRACTION_PROMPT)
    assert plain[1:] == [
        HumanMessage(content="example"),
        AIMessage(content=json.dumps(GOOD)),
        HumanMessage("case"),
    ]


def test_the_classification_prompt_lists_the_labels():
    task = ClassificationTask(labels=("card_arrival", "card_lost"))
    messages = build_messages(
        schema=task.record_schema(),
        examples=[("where is it", {"label": "card_arrival"})],
        text="lost it",
        task=task,
    )
    assert messages == [
        SystemMessage(
            content="Classify the text into one of these labels:\n- card_arrival\n- card_lost\n"
            'Answer with one JSON object: {"label": "the label"}.'
        ),
        HumanMessage(content="where is it"),
        AIMessage(content='{"label": "card_arrival"}'),
        HumanMessage(content="lost it"),
    ]


def test_the_multi_label_prompt_allows_several_labels_or_none():
    task = ClassificationTask(labels=("a", "b"), multi_label=True)
    system = build_messages(schema=task.record_schema(), examples=[], text="t", task=task)[0].content
    assert system == (
        "Classify the text with every label that applies, from these labels:\n- a\n- b\n"
        'Answer with one JSON object: {"labels": [the labels that apply]}, or {"labels": []} '
        "when none applies."
    )


def test_the_tool_calling_prompt_shows_each_tool_and_the_null_call():
    parameters = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    task = parse_task(
        {
            "kind": "tool_calling",
            "tools": [
                {
                    "type": "function",
                    "function": {"name": "get_weather", "description": "Weather", "parameters": parameters},
                },
                {"type": "function", "function": {"name": "now"}},
            ],
        }
    )
    assert isinstance(task, ToolCallingTask)
    system = build_messages(schema=task.record_schema(), examples=[], text="t", task=task)[0].content
    assert system == (
        "Call the tool that does what the text asks, with its arguments, choosing from these tools:\n"
        f"- get_weather: Weather\n  parameters: {json.dumps(parameters)}\n"
        '- now\n  parameters: {"type": "object", "properties": {}}\n'
        'Answer with one JSON object: {"call": {"name": "the tool\'s name", "arguments": {its parameters}}}, '
        'or {"call": null} when no tool fits.'
    )


def test_the_generation_prompt_takes_the_task_instruction():
    generic = build_messages(
        schema=GenerationTask().record_schema(), examples=[], text="t", task=GenerationTask()
    )
    assert generic[0].content == (
        'Write the text that the input asks for. Answer with one JSON object: {"text": "the text"}.'
    )
    task = GenerationTask(instruction="Describe the restaurant in one sentence.")
    told = build_messages(schema=task.record_schema(), examples=[], text="t", task=task)
    assert told[0].content == (
        'Describe the restaurant in one sentence. Answer with one JSON object: {"text": "the text"}.'
    )


def _weather_task() -> ToolCallingTask:
    parameters = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    function = {"name": "get_weather", "description": "Weather", "parameters": parameters}
    task = parse_task({"kind": "tool_calling", "tools": [{"type": "function", "function": function}]})
    assert isinstance(task, ToolCallingTask)
    return task


def test_with_native_tools_the_prompt_asks_for_a_tool_call_and_shows_calls_as_tool_calls():
    task = _weather_task()
    examples: list[tuple[str, dict[str, Any]]] = [
        ("Weather in Rome?", {"call": {"name": "get_weather", "arguments": {"city": "Rome"}}}),
        ("Tell me a joke.", {"call": None}),
    ]
    messages = build_messages(
        schema=task.record_schema(), examples=examples, text="case", task=task, native_tools=True
    )
    assert messages[0] == SystemMessage(content=NATIVE_TOOL_INSTRUCTION)
    assert "JSON" not in NATIVE_TOOL_INSTRUCTION
    assert "get_weather" not in NATIVE_TOOL_INSTRUCTION
    call = messages[2]
    assert isinstance(call, AIMessage)
    assert (call.content, call.tool_calls) == (
        "",
        [{"name": "get_weather", "args": {"city": "Rome"}, "id": "example-1-0", "type": "tool_call"}],
    )
    no_call = messages[4]
    assert isinstance(no_call, AIMessage)
    assert (no_call.content, no_call.tool_calls) == (NO_TOOL_ANSWER, [])
    assert [m.content for m in messages[1::2]] == ["Weather in Rome?", "Tell me a joke.", "case"]
    assert len(messages) == 6


def test_native_tools_change_nothing_but_a_tool_calling_prompt():
    task = _weather_task()
    schema = task.record_schema()
    example = [("Weather in Rome?", {"call": {"name": "get_weather", "arguments": {"city": "Rome"}}})]
    assert build_messages(schema=schema, examples=example, text="t", task=task, native_tools=False) == (
        build_messages(schema=schema, examples=example, text="t", task=task)
    )
    assert build_messages(schema=SCHEMA, examples=[("e", GOOD)], text="t", native_tools=True) == (
        build_messages(schema=SCHEMA, examples=[("e", GOOD)], text="t")
    )


def test_a_native_repair_answers_the_call_with_a_tool_message():
    record = {"call": {"name": "get_forecast", "arguments": {"city": "Paris"}}}
    turn = repair_turn(raw=json.dumps(record), record=record, errors=["call: not valid"], native_tools=True)
    call, answer = turn
    assert isinstance(call, AIMessage)
    assert isinstance(answer, ToolMessage)
    assert call.tool_calls == [
        {"name": "get_forecast", "args": {"city": "Paris"}, "id": "repair-0", "type": "tool_call"}
    ]
    assert answer.tool_call_id == "repair-0"
    assert answer.content == (
        "The tool call is invalid: call: not valid. Call one of the tools again, corrected, "
        "or answer without a tool call when none fits."
    )
    raw = "the server's tool call is not readable"
    unread = repair_turn(raw=raw, record=None, errors=["x"], native_tools=True)
    assert [type(m) for m in unread] == [AIMessage, HumanMessage]
    assert unread[0].content == "the server's tool call is not readable"
    assert str(unread[1].content).startswith("The answer is invalid: x. Call one of the tools again")


def test_without_native_tools_a_repair_is_the_json_and_the_validator_message():
    turn = repair_turn(raw='{"call": 1}', record=None, errors=["call: 1 is not valid"])
    assert turn == [AIMessage(content='{"call": 1}'), repair_message(["call: 1 is not valid"])]


def test_a_tool_call_counts_in_the_prompt_as_its_json():
    task = _weather_task()
    example = [("Weather in Rome?", {"call": {"name": "get_weather", "arguments": {"city": "Rome"}}})]
    schema = task.record_schema()
    call = build_messages(schema=schema, examples=example, text="", task=task, native_tools=True)[2]
    assert prompt_text(call) == '[{"name": "get_weather", "arguments": {"city": "Rome"}}]'
    assert prompt_text(HumanMessage(content="plain")) == "plain"
    assert native_tools_text(task, True) == json.dumps([tool.model_dump() for tool in task.tools])
    assert native_tools_text(task, False) == ""


def test_with_native_tools_a_task_of_several_calls_shows_its_examples_calls_as_tool_calls():
    task = _weather_task().model_copy(update={"calls": "many"})
    examples: list[tuple[str, dict[str, Any]]] = [
        (
            "Rome and Oslo?",
            {"calls": [{"name": "get_weather", "arguments": {"city": c}} for c in ("Rome", "Oslo")]},
        ),
        ("Tell me a joke.", {"calls": []}),
    ]
    messages = build_messages(
        schema=task.record_schema(), examples=examples, text="case", task=task, native_tools=True
    )
    both, none = messages[2], messages[4]
    assert isinstance(both, AIMessage)
    assert [(c["name"], c["args"], c["id"]) for c in both.tool_calls] == [
        ("get_weather", {"city": "Rome"}, "example-1-0"),
        ("get_weather", {"city": "Oslo"}, "example-1-1"),
    ]
    assert isinstance(none, AIMessage)
    assert (none.content, none.tool_calls) == (NO_TOOL_ANSWER, [])
    calls = {"calls": [{"name": "get_forecast", "arguments": {"city": "Paris"}}]}
    call, answer = repair_turn(
        raw=json.dumps(calls), record=calls, errors=["calls: not valid"], native_tools=True
    )
    assert isinstance(answer, ToolMessage)
    assert isinstance(call, AIMessage)
    assert [c["name"] for c in call.tool_calls] == ["get_forecast"]
    empty = repair_turn(raw='{"calls": []}', record={"calls": []}, errors=["x"], native_tools=True)
    assert [type(m) for m in empty] == [AIMessage, HumanMessage]  # no call to answer: a user turn
