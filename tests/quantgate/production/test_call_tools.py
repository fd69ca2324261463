"""A production call with its own tools (`ToolCaller`'s `tools=`): the call is prompted with them,
answered by the model bound to their record schema (one per tool set, by its hash) and judged
against them; without tools the run's are used, and a run whose task.json offers none asks for them;
bad tools are named by their place."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from evaluators.errors import UsageError
from quantgate import ToolCall, open_tool_caller
from quantgate.backends import OpenedVariant
from quantgate.inputs._variants import Variant
from quantgate.production import _extractor, load_chosen
from tests.fakes import QueuedChatModel, write_dataset
from tests.quantgate.production.task_runs import TOOLS, call_answer, tool_calling_run
from tests.quantgate.run_factory import run_ref_and_quant

FLIGHT = {
    "type": "function",
    "function": {
        "name": "book_flight",
        "description": "Book a flight to a city.",
        "parameters": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]},
    },
}
_BOOK = {"name": "book_flight", "arguments": {"to": "Lima"}}


def _offered(schema: Mapping[str, Any]) -> tuple[str, ...]:
    branches = schema["properties"]["call"]["anyOf"]
    return tuple(b["properties"]["name"]["const"] for b in branches if b != {"type": "null"})


@pytest.fixture(scope="module")
def tool_calling(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tool_calling_run(tmp_path_factory.mktemp("tool_calling"))


@pytest.fixture
def bound(monkeypatch: pytest.MonkeyPatch) -> dict[tuple[str, ...], QueuedChatModel]:
    """The models a backend binds to each record schema it is asked for (`for_schema`), by the
    tools the schema offers; the variant's own is bound to the run's tools."""
    models: dict[tuple[str, ...], QueuedChatModel] = {}

    def for_schema(schema: Mapping[str, Any]) -> QueuedChatModel:
        return models.setdefault(_offered(schema), QueuedChatModel(outputs=[call_answer(_BOOK)]))

    @contextmanager
    def opened(variant: Variant, schema: Mapping[str, Any], **kwargs: Any) -> Iterator[OpenedVariant]:
        yield OpenedVariant(chat_model=for_schema(schema), for_schema=for_schema)

    monkeypatch.setattr(_extractor, "open_variant", opened)
    return models


def test_a_call_s_own_tools_prompt_bind_and_judge_it(tool_calling: Path, bound) -> None:
    with open_tool_caller(load_chosen(tool_calling, chat_model=QueuedChatModel(outputs=["{}"]))) as call_tool:
        own = call_tool("a flight to Lima", tools=[FLIGHT])
        again = call_tool("a flight to Oslo", tools=[json.loads(json.dumps(FLIGHT))])
        run_s = call_tool("a flight to Lima")  # the run's tools: book_flight is not one of them
    assert own.call == ToolCall(name="book_flight", arguments={"to": "Lima"})
    assert (own.valid, again.valid) == (True, True)
    assert (run_s.valid, run_s.call) == (False, None)
    assert set(bound) == {("get_weather", "convert_currency"), ("book_flight",)}  # one model per tool set
    flights = bound[("book_flight",)]
    assert [str(call[-1].content) for call in flights.calls] == ["a flight to Lima", "a flight to Oslo"]
    system = str(flights.calls[0][0].content)
    assert "- book_flight: Book a flight to a city." in system
    assert "get_weather" not in system
    assert len(bound[("get_weather", "convert_currency")].calls) == 3  # the first answer and two repairs


def test_bad_tools_are_named_by_their_place(tool_calling: Path, bound) -> None:
    twice = [FLIGHT, FLIGHT]
    misnamed = [FLIGHT, {"type": "function", "function": {"name": "book a flight"}}]
    dangling = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"when": {"$ref": "#/$defs/When"}}}}}]  # fmt: skip
    with open_tool_caller(load_chosen(tool_calling, chat_model=QueuedChatModel(outputs=["{}"]))) as call_tool:
        for tools, message in (
            (twice, "tools: tool name 'book_flight' is used twice"),
            (misnamed, "tools[1].function.name: 'book a flight' is not a function name"),
            (dangling, "tools[0].function.parameters.properties.when.$ref: '#/$defs/When' points to nothing"),
            ([], "tools: the list is empty"),
            ({"type": "function"}, "tools: a list of tools is needed, not dict"),
        ):
            with pytest.raises(UsageError, match=f"^{_escaped(message)}"):
                call_tool("a flight to Lima", tools=tools)  # type: ignore[arg-type]
    assert bound[("get_weather", "convert_currency")].calls == []


def _escaped(text: str) -> str:
    import re

    return re.escape(text)


def test_a_run_whose_cases_brought_their_tools_asks_for_the_call_s(tmp_path: Path, bound) -> None:
    task = {**TOOLS, "tools": []}
    lines = [
        {"id": "f0", "text": "a flight to Lima", "expected": {"call": _BOOK}, "tools": [FLIGHT]},
        {"id": "f1", "text": "a joke", "expected": {"call": None}, "tools": [FLIGHT]},
    ]
    dataset = write_dataset(tmp_path / "own", lines, schema=None, task=task)
    answers = {"a flight to Lima": call_answer(_BOOK), "a joke": call_answer(None)}
    run_dir = run_ref_and_quant(dataset, answers, answers, tmp_path / "runs", decide=True)
    with open_tool_caller(load_chosen(run_dir, chat_model=QueuedChatModel(outputs=["{}"]))) as call_tool:
        with pytest.raises(
            UsageError, match=r"^tools: the run's task.json offers no tools .*tools=\[\.\.\.\]"
        ):
            call_tool("a flight to Lima")
        answer = call_tool("a flight to Lima", tools=[FLIGHT])
    assert answer.call == ToolCall(name="book_flight", arguments={"to": "Lima"})
