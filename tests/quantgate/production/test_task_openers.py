"""The typed openers of the task kinds other than extraction (`quantgate.production._kind_openers`): a
classification run gives labels, a tool-calling run calls and no calls, a run of another kind is
refused naming its opener, and the guard counts the calls, judging agreement with the kind's scorer."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from evaluators.fields import score_fields
from quantgate import Classification, Generation, ToolCall, open_classifier, open_tool_caller
from quantgate.production import OnlineGuard, ProductionError, load_chosen, open_extractor, open_generator
from tests.fakes import QueuedChatModel
from tests.quantgate.production.task_runs import (
    call_answer,
    classification_run,
    decided_file_run,
    generation_run,
    multi_label_run,
    parallel_calls_run,
    tool_calling_run,
)


@pytest.fixture(scope="module")
def classification(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return classification_run(tmp_path_factory.mktemp("classification"))


@pytest.fixture(scope="module")
def tool_calling(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tool_calling_run(tmp_path_factory.mktemp("tool_calling"))


def test_a_classification_run_gives_typed_labels(classification: Path) -> None:
    model = QueuedChatModel(outputs=[json.dumps({"label": "card_lost"}), "not json"])
    guard = OnlineGuard.from_thresholds(min_format_validity=0.9, window=2, min_count=2)
    with open_classifier(load_chosen(classification, chat_model=model), guard=guard) as classify:
        answer = classify("I lost my card")
        failed = classify("something else")
        assert classify.extractor.examples_from == "run"
    assert answer == Classification(valid=True, result=answer.result, label="card_lost")
    assert (answer.labels, answer.record, answer.error) == (None, {"label": "card_lost"}, None)
    assert (len(answer.attempts), answer.raw) == (1, '{"label": "card_lost"}')
    with pytest.raises(dataclasses.FrozenInstanceError):
        answer.label = "card_arrival"  # type: ignore[misc]
    # "not json" three times: the first answer and the run's two repairs (max_repairs 2)
    assert (failed.valid, failed.label, failed.record, len(failed.attempts)) == (False, None, None, 3)
    assert failed.error is not None
    # the guard counted both calls: format validity 1/2, below its 0.9
    status = guard.status()
    assert (status.observed, status.readings[0].value, status.tripped) == (2, 0.5, True)
    assert model.calls[0][0].text.startswith("Classify the text into one of these labels:")


def test_a_multi_label_run_gives_a_tuple_of_labels(tmp_path: Path) -> None:
    model = QueuedChatModel(
        outputs=[json.dumps({"labels": ["refund", "billing"]}), json.dumps({"labels": []})]
    )
    with open_classifier(load_chosen(multi_label_run(tmp_path), chat_model=model)) as classify:
        both, none = classify("charged twice, want my money back"), classify("hello")
    assert (both.label, both.labels, none.labels, none.valid) == (None, ("refund", "billing"), (), True)


def test_a_generation_run_gives_the_text(tmp_path: Path) -> None:
    model = QueuedChatModel(outputs=[json.dumps({"text": "C is a pub by the river."})])
    with open_generator(load_chosen(generation_run(tmp_path), chat_model=model)) as generate:
        answer = generate("name[C], eatType[pub], area[riverside]")
    assert answer == Generation(valid=True, result=answer.result, text="C is a pub by the river.")


def test_a_tool_calling_run_gives_a_typed_call_and_a_no_call(tool_calling: Path) -> None:
    convert = {"name": "convert_currency", "arguments": {"amount": 12.5, "to": "EUR"}}
    model = QueuedChatModel(outputs=[call_answer(convert), call_answer(None)])
    with open_tool_caller(load_chosen(tool_calling, chat_model=model)) as call_tool:
        called = call_tool("12.50 dollars in euros")
        declined = call_tool("what is love")
    assert called.call == ToolCall(name="convert_currency", arguments={"amount": 12.5, "to": "EUR"})
    assert (called.valid, called.abstained) == (True, False)
    assert (declined.valid, declined.call, declined.abstained) == (True, None, True)
    assert (called.calls, declined.calls) == (
        (called.call,),
        (),
    )  # the one call, as a run of several gives them
    system = model.calls[0][0].text
    assert "get_weather" in system
    assert "convert_currency" in system


def test_an_invalid_tool_call_is_no_call_and_not_an_abstention(tool_calling: Path) -> None:
    unknown = call_answer({"name": "book_flight", "arguments": {}})
    model = QueuedChatModel(outputs=[unknown])
    with open_tool_caller(load_chosen(tool_calling, chat_model=model)) as call_tool:
        answer = call_tool("a flight to Lima")
    assert (answer.valid, answer.call, answer.abstained) == (False, None, False)
    assert answer.raw == unknown
    assert answer.calls == ()


def test_a_run_of_several_calls_gives_every_call(tmp_path: Path) -> None:
    """`"calls": "many"`: every call the model made, in its order (`calls`; `call` is None), none for
    a valid answer without a call (an abstention), none for an invalid answer (not an abstention)."""
    two = [{"name": "get_weather", "arguments": {"city": "Lima"}},
           {"name": "convert_currency", "arguments": {"amount": 5, "to": "PEN"}}]  # fmt: skip
    unknown = json.dumps({"calls": [{"name": "book_flight", "arguments": {}}]})
    model = QueuedChatModel(outputs=[json.dumps({"calls": two}), json.dumps({"calls": []}), unknown])
    with open_tool_caller(load_chosen(parallel_calls_run(tmp_path), chat_model=model)) as call_tool:
        called, declined, invalid = (call_tool(text) for text in ("Lima: weather, 5 in soles", "hi", "fly"))
    assert called.calls == (
        ToolCall(name="get_weather", arguments={"city": "Lima"}),
        ToolCall(name="convert_currency", arguments={"amount": 5, "to": "PEN"}),
    )
    assert (called.valid, called.call, called.abstained) == (True, None, False)
    assert (declined.valid, declined.calls, declined.abstained) == (True, (), True)
    assert (invalid.valid, invalid.calls, invalid.abstained) == (False, (), False)


def test_a_run_of_another_kind_is_refused_before_the_model_is_used(
    classification: Path, tool_calling: Path
) -> None:
    model = QueuedChatModel(outputs=["{}"])
    chosen = load_chosen(tool_calling, chat_model=model)
    with pytest.raises(ProductionError) as caught, open_classifier(chosen):
        pass
    assert str(caught.value) == (
        f"{tool_calling}: run {tool_calling.name} is a tool_calling run; "
        "use open_tool_caller, not open_classifier"
    )
    expected = r"is a classification run; use open_classifier, not open_generator"
    with (
        pytest.raises(ProductionError, match=expected),
        open_generator(load_chosen(classification, chat_model=model)),
    ):
        pass
    assert model.calls == []


def test_an_extraction_run_points_to_open_extractor(tmp_path: Path) -> None:
    chosen = load_chosen(
        decided_file_run(tmp_path, backend="langchain"), chat_model=QueuedChatModel(outputs=["{}"])
    )
    expected = r"is an extraction run; use open_extractor, not open_tool_caller"
    with pytest.raises(ProductionError, match=expected), open_tool_caller(chosen):
        pass


def test_open_extractor_on_a_tool_calling_run_gives_the_record_as_a_dict(tool_calling: Path) -> None:
    weather = {"name": "get_weather", "arguments": {"city": "Lima"}}
    model = QueuedChatModel(outputs=[call_answer(weather)])
    with open_extractor(load_chosen(tool_calling, chat_model=model)) as extractor:
        assert extractor.extract("weather in Lima") == {"call": weather}


def test_the_guards_agreement_is_judged_by_the_kinds_scorer(tool_calling: Path) -> None:
    """The variant writes the default unit (and its arguments in another order) where the shadow
    reference left the unit out: the same call for the tool-calling scorer, not field by field."""
    mine = {"name": "get_weather", "arguments": {"unit": "celsius", "city": "Paris"}}
    reference = {"call": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    guard = OnlineGuard.from_thresholds(min_agreement=0.9, window=1)
    model = QueuedChatModel(outputs=[call_answer(mine)])
    with open_tool_caller(load_chosen(tool_calling, chat_model=model), guard=guard) as call_tool:
        answer = call_tool("weather in Paris, please", reference_record=reference)
        spec = call_tool.extractor.context.spec
    assert answer.record == {"call": mine}
    reading = guard.status().readings[0]
    assert (reading.value, reading.count, guard.tripped) == (1.0, 1, False)
    by_field = score_fields(outputs=answer.record, reference_outputs=reference, schema=spec)
    assert by_field.fields["call"].score == 0.0  # what field-by-field matching said of the same call
