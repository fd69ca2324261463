"""Production plug-in: the decision's variant resolved and checked, the user's schema (pydantic or
JSON Schema), and the evaluated extraction graph run with a fake chat model."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Literal

import pytest
from langchain_core.messages import AIMessage, SystemMessage
from pydantic import BaseModel, Field

from evaluators.schema import SchemaSupportError, parse_schema
from graphs.extraction import graph as extraction_graph
from quantgate.decide._recommendation import decide
from quantgate.inputs._dataset import Case, load_dataset, write_dataset
from quantgate.inputs._gates import Gates
from quantgate.inputs._record_schema import record_schema
from quantgate.production._extractor import (
    ExtractionFailedError,
    ProductionError,
    load_chosen,
    open_extractor,
)
from quantgate.production._guard import OnlineGuard
from quantgate.rundir._files import DATASET_DIR, DECISION_JSON, SUMMARY_FILE
from quantgate.rundir._store import read_summary, write_model
from tests.fakes import QueuedChatModel
from tests.quantgate.production.task_runs import decided_file_run
from tests.quantgate.run_factory import SCHEMA, make_run

RIGHT = {"a": 1.0, "b": 1.0}
CASES = 100  # identical answers: enough for Q to pass the accuracy gate
GOOD = json.dumps({"a": "x", "b": "1.234,5"})  # normalized to 1234.5 by the graph


class AB(BaseModel):
    """The synthetic run's record, as an application would write it."""

    a: str | None = Field(None, description="The a of the text")
    b: float | None = None


def test_load_chosen_resolves_the_recommended_variant(tmp_path: Path) -> None:
    chosen = load_chosen(decided_file_run(tmp_path))
    assert chosen.variant.name == "Q"
    assert chosen.variant.backend == "llamacpp"
    assert chosen.variant.model == str(tmp_path / "Q.gguf")
    assert not chosen.is_reference
    assert chosen.max_repairs == 1  # what the evaluation allowed
    assert chosen.decision.rollback is not None
    assert chosen.decision.rollback.variant == "Q"
    assert load_dataset(chosen.dataset_dir).schema == SCHEMA


def test_a_run_without_a_decision(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", {"R": [RIGHT]}, footprints={"R": 1.0})
    with pytest.raises(
        ProductionError, match=r"run/decision.json: not found; decide first: quantgate decide"
    ):
        load_chosen(run)


def test_a_decision_on_an_incomplete_run_is_refused_unless_allowed(tmp_path: Path) -> None:
    run = decided_file_run(tmp_path)
    summary = read_summary(run)
    summary.status = "interrupted"
    write_model(run / SUMMARY_FILE, summary)
    decide(run, Gates(min_cases=10, min_slice_cases=10))
    with pytest.raises(ProductionError) as caught:
        load_chosen(run)
    message = str(caught.value)
    assert message.startswith(f"{run / DECISION_JSON}: decided on an incomplete run (summary.json says")
    assert f"finish it (quantgate run --resume {run}) and decide again" in message
    assert load_chosen(run, allow_incomplete=True).variant.name == "Q"


def test_a_decision_that_recommends_nothing(tmp_path: Path) -> None:
    run = decided_file_run(tmp_path, max_memory_mb=100)
    with pytest.raises(ProductionError, match=r"run/decision.json: recommends no variant"):
        load_chosen(run)


def test_a_decision_of_another_format_version_is_refused_naming_the_file_and_version(tmp_path: Path) -> None:
    run = decided_file_run(tmp_path)
    path = run / DECISION_JSON
    path.write_text(json.dumps({**json.loads(path.read_text()), "format_version": 99}))
    with pytest.raises(ProductionError) as caught:
        load_chosen(run)
    message = str(caught.value)
    assert message.startswith(f"unreadable decision: {path}: ")
    assert "format_version 99 is not one this quantgate reads (2, 3, 4, 5, 6, 7, 8, 9)" in message


def test_a_missing_model_file(tmp_path: Path) -> None:
    run = decided_file_run(tmp_path)
    (tmp_path / "Q.gguf").unlink()
    with pytest.raises(
        ProductionError, match=r"decision.json: variant 'Q': its model file .*Q.gguf is missing"
    ):
        load_chosen(run)


def test_a_model_file_that_is_not_the_one_evaluated(tmp_path: Path) -> None:
    run = decided_file_run(tmp_path)
    (tmp_path / "Q.gguf").write_bytes(b"other weights")
    with pytest.raises(ProductionError, match=r"Q.gguf has sha256 [0-9a-f]{64}, but the run evaluated"):
        load_chosen(run)
    assert load_chosen(run, verify_sha256=False).variant.name == "Q"


def test_a_chat_model_variant_needs_its_model_again(tmp_path: Path) -> None:
    run = decided_file_run(tmp_path, backend="langchain")
    with pytest.raises(ProductionError, match="pass the same model as load_chosen"):
        load_chosen(run)
    model = QueuedChatModel(outputs=[GOOD])
    assert load_chosen(run, chat_model=model).variant.chat_model is model


class Organizer(BaseModel):
    name: str | None = None
    email: str | None = Field(None, description="As written")


class Event(BaseModel):
    kind: Literal["meeting", "party"] = Field(description="Kind of event")
    mode: Literal["online", "in person"] | None = None
    day: dt.date | None = None
    organizer: Organizer
    backup: Organizer | None = Field(None, description="Who stands in")
    attendees: list[str] = Field(default_factory=list)
    seats: int | None = None


def test_record_schema_of_a_pydantic_model_is_in_the_supported_subset() -> None:
    schema = record_schema(Event)
    assert "$defs" not in json.dumps(schema)
    assert "anyOf" not in json.dumps(schema)
    kinds = {leaf.name: (leaf.kind, leaf.nullable) for leaf in parse_schema(schema).leaves()}
    assert kinds == {
        "kind": ("enum", False),
        "mode": ("enum", True),
        "day": ("date", True),
        "organizer.name": ("string", True),
        "organizer.email": ("string", True),
        "backup.name": ("string", True),
        "backup.email": ("string", True),
        "attendees": ("scalar_array", False),
        "seats": ("integer", True),
    }
    props = schema["properties"]
    assert props["mode"]["enum"] == ["online", "in person", None]
    assert props["backup"]["type"] == ["object", "null"]
    assert props["backup"]["description"] == "Who stands in"
    assert schema["required"] == list(props)  # the model always writes every key
    assert props["organizer"]["required"] == ["name", "email"]
    assert schema["additionalProperties"] is False


def test_record_schema_names_what_it_cannot_handle() -> None:
    class Mixed(BaseModel):
        value: int | str

    with pytest.raises(SchemaSupportError, match="value: unsupported construct 'anyOf'"):
        record_schema(Mixed)


def test_record_schema_takes_a_json_schema_as_given() -> None:
    schema = record_schema(SCHEMA)
    assert schema == SCHEMA
    assert schema is not SCHEMA


def test_extract_with_a_pydantic_schema_through_the_evaluated_graph(tmp_path: Path) -> None:
    model = QueuedChatModel(outputs=[GOOD])
    with open_extractor(
        load_chosen(decided_file_run(tmp_path, backend="langchain"), chat_model=model), schema=AB
    ) as ex:
        assert ex.graph is extraction_graph
        assert ex.context.model is model
        assert ex.context.max_repairs == 1
        assert ex.context.schema == record_schema(AB)
        assert ex.examples_from == "none"  # the synthetic run has no few-shot examples
        record = ex.extract("a is x, b is 1.234,5")
    assert record == AB(a="x", b=1234.5)
    system = model.calls[0][0]
    assert isinstance(system, SystemMessage)
    assert "- a (text, or null): The a of the text" in system.text


def test_extract_with_a_json_schema_gives_a_dict(tmp_path: Path) -> None:
    model = QueuedChatModel(outputs=[GOOD])
    chosen = load_chosen(decided_file_run(tmp_path, backend="langchain"), chat_model=model)
    with open_extractor(chosen) as default, open_extractor(chosen, schema=SCHEMA) as given:
        assert default.context.schema == SCHEMA  # no schema: the evaluated dataset's
        assert given.extract("text") == {"a": "x", "b": 1234.5}


def test_invalid_output_after_the_repairs_raises_with_the_result(tmp_path: Path) -> None:
    model = QueuedChatModel(outputs=['{"a": 3}'])
    guard = OnlineGuard.from_thresholds(min_format_validity=0.5, window=1)
    chosen = load_chosen(decided_file_run(tmp_path, backend="langchain"), chat_model=model)
    with open_extractor(chosen, schema=AB, guard=guard) as ex, pytest.raises(ExtractionFailedError) as caught:
        ex.extract("text")
    assert len(caught.value.result.attempts) == 2  # the run's max_repairs: one repair
    assert "is not of type" in str(caught.value)
    assert guard.tripped  # the failed call was observed


def _with_examples(run: Path) -> None:
    dataset = load_dataset(run / DATASET_DIR)
    shot = Case(id="ex-1", text="example text", expected={"a": "shown", "b": 2.0})
    write_dataset(run / DATASET_DIR, schema=dataset.schema, cases=dataset.cases, examples=[shot])


def test_the_runs_examples_are_used_only_when_they_fit_the_schema(tmp_path: Path) -> None:
    model = QueuedChatModel(outputs=[GOOD])
    run = decided_file_run(tmp_path, backend="langchain")
    _with_examples(run)
    chosen = load_chosen(run, chat_model=model)
    with open_extractor(chosen, schema=AB) as ex:
        assert ex.examples_from == "run"
        assert ex.context.examples == [("example text", {"a": "shown", "b": 2.0})]
        ex.extract("text")
    assert isinstance(model.calls[0][2], AIMessage)
    assert json.loads(model.calls[0][2].text) == {"a": "shown", "b": 2.0}

    class Other(BaseModel):
        a: str | None = None

    class Strict(BaseModel):
        a: str | None = None
        b: str | None = None  # the example's 2.0 is not a string

    for schema in (Other, Strict):
        with open_extractor(chosen, schema=schema) as unfit:
            assert unfit.examples_from == "none"
            assert unfit.context.examples == []
    with open_extractor(chosen, schema=AB, examples=[("mine", AB(a="m", b=None))]) as ex:
        assert ex.examples_from == "given"
        assert ex.context.examples == [("mine", {"a": "m", "b": None})]
    with open_extractor(chosen, schema=AB, examples=[]) as ex:
        assert ex.examples_from == "none"
