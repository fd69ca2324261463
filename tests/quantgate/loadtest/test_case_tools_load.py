"""The load test on a dataset whose cases bring their own tools (tests/data/per-case-tools): each
request goes to the model constrained to its case's record schema (one per tool set, as a run has
them) and its answer is judged against that schema, not against every case's tools together."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from quantgate.backends import OpenedVariant
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.loadtest import _levels
from quantgate.loadtest._level_specs import parse_levels
from quantgate.loadtest._levels import LoadOptions
from quantgate.loadtest._loadtest_run import run_load_test
from tests.fakes import QueuedChatModel

DATA = Path(__file__).parents[2] / "data" / "per-case-tools"

_WRONG_TOOL = {"name": "convert_currency", "arguments": {"amount": 1, "to": "EUR"}}
_ANSWERS = {
    "weather in Paris": json.dumps({"call": _WRONG_TOOL}),  # a tool only other cases are offered
    "50 euros in dollars": json.dumps(
        {"call": {"name": "convert_currency", "arguments": {"amount": 50, "to": "USD"}}}
    ),
    "a share of ACME": json.dumps({"call": {"name": "get_stock_price", "arguments": {"symbol": "ACME"}}}),
    "a joke": json.dumps({"call": None}),
}


def _offered(schema: Mapping[str, Any]) -> tuple[str, ...]:
    branches = schema["properties"]["call"]["anyOf"]
    return tuple(b["properties"]["name"]["const"] for b in branches if b != {"type": "null"})


def test_each_request_goes_to_its_case_s_model_and_is_judged_by_its_schema(monkeypatch, tmp_path) -> None:
    bound: dict[tuple[str, ...], QueuedChatModel] = {}
    opened_for: list[tuple[str, ...]] = []

    def for_schema(schema: Mapping[str, Any]) -> QueuedChatModel:  # a backend's model per schema
        return bound.setdefault(_offered(schema), QueuedChatModel(outputs=["{}"], by_text=_ANSWERS))

    unbound = QueuedChatModel(outputs=["{}"], by_text=_ANSWERS)

    @contextmanager
    def opened(variant: Variant, schema: Mapping[str, Any], **kwargs: Any) -> Iterator[OpenedVariant]:
        opened_for.append(_offered(schema))
        yield OpenedVariant(chat_model=unbound, for_schema=for_schema)

    monkeypatch.setattr(_levels, "open_variant", opened)
    dataset = load_dataset(DATA)
    options = LoadOptions(levels=parse_levels("1"), requests=4, cases=None)
    variants = VariantSet(variants=[Variant.from_chat_model("v", unbound)])
    run_dir = run_load_test(dataset, variants, options=options, out=tmp_path)

    assert opened_for == [("get_weather", "convert_currency", "get_stock_price")]  # every tool offered
    assert set(bound) == {
        ("get_weather",),
        ("get_weather", "convert_currency"),
        ("get_weather", "get_stock_price"),
    }
    assert unbound.calls == []  # the variant's own model (every tool) answers no case
    money = bound[("get_weather", "convert_currency")]
    assert sorted(str(call[-1].content) for call in money.calls) == [
        "How much is 50 euros in dollars?",
        "Tell me a joke.",
    ]
    records = [json.loads(line) for line in (run_dir / "load.jsonl").open()]
    valid = {r["case_id"]: r["valid"] for r in records}
    # the weather case calls a tool its case is not offered: invalid for it, though valid for the
    # dataset's tools taken together
    assert valid == {"weather": False, "money": True, "stock": True, "joke": True}
    assert {r["case_id"]: r["error_kind"] for r in records}["weather"] == "invalid_output"
    assert pytest.approx(3 / 4) == sum(valid.values()) / len(valid)
