"""One extraction result type: `ExtractionResult` is the graph's output schema, and the state's
output keys are its fields, name and type."""

from __future__ import annotations

import dataclasses
import json
from typing import get_type_hints

from graphs.extraction import ExtractionContext, ExtractionInput, ExtractionResult, ExtractionState, graph
from tests.fakes import GOOD, SCHEMA, QueuedChatModel


def test_the_state_output_keys_are_the_result_fields_with_their_types() -> None:
    state = get_type_hints(ExtractionState)
    inputs = get_type_hints(ExtractionInput)
    outputs = {key: kind for key, kind in state.items() if key not in inputs and key != "messages"}
    assert outputs == get_type_hints(ExtractionResult)
    assert graph.builder.output_schema is ExtractionResult


def test_the_graph_returns_the_result_type_and_the_dict_of_its_keys() -> None:
    context = ExtractionContext(model=QueuedChatModel(outputs=[json.dumps(GOOD)]), schema=SCHEMA)
    as_dict = graph.invoke({"text": "Factura de Acme"}, context=context)
    assert set(as_dict) <= {f.name for f in dataclasses.fields(ExtractionResult)}
    typed = graph.invoke({"text": "Factura de Acme"}, context=context, version="v2").value
    assert isinstance(typed, ExtractionResult)
    assert typed.valid
    assert dataclasses.replace(typed, attempts=[]) == dataclasses.replace(
        ExtractionResult.from_output(as_dict), attempts=[]
    )  # the timings differ between the two calls


def test_a_larger_state_gives_the_result_its_own_keys_only() -> None:
    result = ExtractionResult.from_output({"valid": True, "record": {"a": 1}, "signals": [1], "raw": None})
    assert (result.valid, result.record, result.raw, result.attempts) == (True, {"a": 1}, None, [])
