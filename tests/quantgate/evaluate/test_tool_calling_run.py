"""A tool-calling dataset through a whole run with fake chat models: each variant's summary (and
summary.json) carries the tool-calling figures (`ToolCallSummary`), counted by hand."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evaluators.tool_calls import ToolCallSummary
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import read_summary
from tests.fakes import QueuedChatModel, write_dataset
from tests.quantgate.production.task_runs import TOOLS, call_answer


def _weather(city: str, **more: Any) -> dict[str, Any]:
    return {"name": "get_weather", "arguments": {"city": city, **more}}


GOLD: dict[str, dict[str, Any] | None] = {
    "weather in Paris?": _weather("Paris"),
    "Oslo, in fahrenheit": _weather("Oslo", unit="fahrenheit"),
    "50 euros in dollars": {"name": "convert_currency", "arguments": {"amount": 50, "to": "USD"}},
    "tell me a joke": None,
    "10 dollars in yen": {"name": "convert_currency", "arguments": {"amount": 10, "to": "JPY"}},
}
"""The cases `t0`..`t4`, in this order: their text and gold call."""

QUANT = {
    "weather in Paris?": call_answer(_weather("Paris", unit="celsius")),  # exact: celsius is the default
    "Oslo, in fahrenheit": call_answer(_weather("Oslo")),  # the right tool, unit celsius for fahrenheit
    "50 euros in dollars": call_answer(None),  # a false abstention
    "tell me a joke": call_answer(_weather("joke")),  # a call where none is due
    "10 dollars in yen": "not json",  # no valid record, after the repairs too
}
"""The quantized variant's answers."""


def _category(call: dict[str, Any] | None) -> str:
    return "category:irrelevance" if call is None else "category:simple_python"


def test_a_tool_calling_run_summary_carries_the_tool_calling_figures(tmp_path):
    lines = [
        {"id": f"t{i}", "text": t, "expected": {"call": c}, "tags": [_category(c)]}
        for i, (t, c) in enumerate(GOLD.items())
    ]
    shot = [{"id": "e0", "text": "is it raining in Rome", "expected": {"call": _weather("Rome")}}]
    dataset = load_dataset(write_dataset(tmp_path / "tools", lines, schema=None, task=TOOLS, examples=shot))
    right = {text: call_answer(call) for text, call in GOLD.items()}
    variants = VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model(name, QueuedChatModel(outputs=["{}"], by_text=answers), quantization=q)
            for name, answers, q in (("ref", right, "F16"), ("quant", QUANT, "Q4"))
        ],
    )
    run_dir = run_evaluation(
        dataset, variants, options=RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False)
    )
    ref_entry, quant_entry = read_summary(run_dir).variants
    ref, quant = ref_entry.kind_figures, quant_entry.kind_figures
    assert isinstance(ref, ToolCallSummary)
    assert isinstance(quant, ToolCallSummary)
    # the reference: every call exact; its arguments: t0 city, t1 city and unit, t2 amount and to
    assert ref.model_dump() == {
        "kind": "tool_calling",
        "tool_call_cases": 5,
        "tool_selection_accuracy": 1.0,
        "argument_accuracy": 1.0,
        "argument_accuracy_by_name": {
            "get_weather.city": 1.0,
            "get_weather.unit": 1.0,
            "convert_currency.amount": 1.0,
            "convert_currency.to": 1.0,
        },
        "exact_call_rate": 1.0,
        "abstention_accuracy": 1.0,  # t3: no call
        "false_abstention_rate": 0.0,  # of t0, t1, t2, t4
        "schema_validity": 1.0,  # its 4 calls
        "by_category": {
            "irrelevance": {
                "cases": 1,
                "tool_selection_accuracy": 1.0,
                "argument_accuracy": None,
                "exact_call_rate": 1.0,
            },
            "simple_python": {
                "cases": 4,
                "tool_selection_accuracy": 1.0,
                "argument_accuracy": 1.0,
                "exact_call_rate": 1.0,
            },
        },
    }
    # the variant: the right tool (or rightly none) on t0 and t1 only; arguments t0 city 1 and unit
    # 1 (celsius both, the default), t1 city 1 and unit 0; exact t0 only; t3 called where none is due;
    # no call for t2 among the four cases with a gold call (t4 has no record: not an abstention);
    # its calls t0, t1, t3 are all valid against get_weather's parameters
    assert quant.tool_call_cases == 5
    assert quant.tool_selection_accuracy == pytest.approx(2 / 5)
    assert quant.argument_accuracy == pytest.approx(3 / 4)
    assert quant.argument_accuracy_by_name == {"get_weather.city": 1.0, "get_weather.unit": 0.5}
    assert quant.exact_call_rate == pytest.approx(1 / 5)
    assert quant_entry.field_accuracy == pytest.approx(1 / 5)  # the case score is the exact call
    assert quant.abstention_accuracy == 0.0
    assert quant.false_abstention_rate == pytest.approx(1 / 4)
    assert quant.schema_validity == 1.0
    # per category: t3 alone is irrelevance; the right tool on t0 and t1 of the other four
    assert quant.by_category is not None
    assert quant.by_category["irrelevance"].model_dump() == {
        "cases": 1, "tool_selection_accuracy": 0.0, "argument_accuracy": None, "exact_call_rate": 0.0
    }  # fmt: skip
    assert quant.by_category["simple_python"].model_dump() == pytest.approx({
        "cases": 4, "tool_selection_accuracy": 2 / 4, "argument_accuracy": 3 / 4, "exact_call_rate": 1 / 4
    })  # fmt: skip
    assert "label_accuracy" not in quant_entry.model_dump()["kind_figures"]  # another kind's: not there
    assert "chrf" not in quant_entry.model_dump()
    stored = json.loads((run_dir / "summary.json").read_text())
    (quant_json,) = [v for v in stored["variants"] if v["name"] == "quant"]
    assert quant_json["kind_figures"]["kind"] == "tool_calling"
    assert quant_json["kind_figures"]["exact_call_rate"] == pytest.approx(1 / 5)
