"""A tool-calling dataset of several calls per answer (`"calls": "many"`, gold in BFCL's form)
through a whole run with fake chat models: the case scores pair the calls in any order, summary.json
carries the figures per BFCL category, and the run decides like any other."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evaluators.tasks import ToolCallingTask
from evaluators.tool_calls import ToolCallSummary
from quantgate.decide._recommendation import decide
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import read_summary
from tests.fakes import QueuedChatModel, write_dataset
from tests.quantgate.production.task_runs import TOOLS


def _weather(city: str) -> dict[str, Any]:
    return {"name": "get_weather", "arguments": {"city": city}}


def _gold(*cities: str) -> dict[str, Any]:
    return {
        "calls": [
            {"name": "get_weather", "acceptable": {"city": [c], "unit": ["celsius", ""]}} for c in cities
        ]
    }


CASES: list[tuple[str, dict[str, Any], str]] = [  # (text, gold, category)
    ("weather in Paris and Oslo", _gold("Paris", "Oslo"), "parallel"),
    ("weather in Rome", _gold("Rome"), "simple_python"),
    ("weather in Lima, Quito and Bogota", _gold("Lima", "Quito", "Bogota"), "parallel"),
    ("tell me a joke", {"calls": []}, "irrelevance"),
]


def _answer(*cities: str) -> str:
    return json.dumps({"calls": [_weather(c) for c in cities]})


QUANT = {
    "weather in Paris and Oslo": _answer("Oslo", "paris"),  # in another order, a city restyled: exact
    "weather in Rome": _answer("Rome", "Rome"),  # one call too many
    "weather in Lima, Quito and Bogota": _answer("Lima", "Quito", "Cali"),  # a wrong value
    "tell me a joke": _answer(),  # rightly no call
}


def test_a_run_of_several_calls_scores_them_in_any_order_per_category(tmp_path):
    lines = [
        {"id": f"p{i}", "text": text, "expected": gold, "tags": [f"category:{category}"]}
        for i, (text, gold, category) in enumerate(CASES)
    ]
    task = {**TOOLS, "calls": "many"}
    shot = [
        {
            "id": "e0",
            "text": "weather in Bern and Chur",
            "expected": {"calls": [_weather("Bern"), _weather("Chur")]},
        }
    ]
    dataset = load_dataset(write_dataset(tmp_path / "parallel", lines, schema=None, task=task, examples=shot))
    right = {text: _answer(*[c["acceptable"]["city"][0] for c in gold["calls"]]) for text, gold, _ in CASES}
    variants = VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model(name, QueuedChatModel(outputs=["{}"], by_text=answers), quantization=q)
            for name, answers, q in (("ref", right, "F16"), ("quant", QUANT, "Q4"))
        ],
    )
    options = RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False)
    run_dir = run_evaluation(dataset, variants, options=options)
    ref_entry, quant_entry = read_summary(run_dir).variants
    assert ref_entry.field_accuracy == 1.0
    assert quant_entry.field_accuracy == pytest.approx(2 / 4)  # p0 and p3
    quant = quant_entry.kind_figures
    assert isinstance(quant, ToolCallSummary)
    assert quant.tool_selection_accuracy == pytest.approx(3 / 4)  # p1 called get_weather twice
    # arguments: p0 city 1 + unit 1 twice (left out: may be), p1 its one pair 2 of 2, p2 5 of 6
    assert quant.argument_accuracy == pytest.approx(11 / 12)
    assert quant.by_category is not None
    assert {name: f.exact_call_rate for name, f in quant.by_category.items()} == {
        "irrelevance": 1.0,
        "parallel": 0.5,
        "simple_python": 0.0,
    }
    stored = json.loads((run_dir / "summary.json").read_text())
    (quant_json,) = [v for v in stored["variants"] if v["name"] == "quant"]
    assert quant_json["kind_figures"]["by_category"]["parallel"]["cases"] == 2

    decision = decide(run_dir)  # decided like any other run
    comparison = decision.variants["quant"].comparison
    assert comparison is not None
    assert comparison.overall.reference == 1.0
    assert comparison.overall.variant == pytest.approx(2 / 4)
    assert decision.recommended == "ref"
    assert [r.case_id for r in decision.variants["quant"].regressions] == ["p1", "p2"]
    exported = load_dataset(run_dir / "regressions" / "quant")  # its BFCL-form golds pass the check
    assert isinstance(exported.task, ToolCallingTask)
    assert exported.task.calls == "many"
    assert [c.expected for c in exported.cases] == [CASES[1][1], CASES[2][1]]
