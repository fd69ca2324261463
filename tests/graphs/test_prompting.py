"""The prompt of each task kind; extraction's is unchanged by task kinds (the reference cache
keys on the prompt prefix)."""

import json

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from evaluators.tasks import ClassificationTask, ExtractionTask, GenerationTask, ToolCallingTask, parse_task
from graphs.prompting import build_messages
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
