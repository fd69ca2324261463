"""A dataset whose cases bring their own tools (tests/data/per-case-tools) through the evaluation
graph and a whole run with fake chat models: each case is prompted with its own tools, answered by
the model constrained to its own record schema, and scored against its own tools."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import SystemMessage

from evaluators.comparison import ComparisonOptions
from evaluators.tool_calls import ToolCallSummary
from graphs.evaluation import EvaluationContext, graph
from graphs.long_inputs import prompt_messages
from quantgate.analysis._case_diff import case_diff
from quantgate.analysis._report import write_report
from quantgate.analysis._run_view import load_run_view
from quantgate.backends import OpenedVariant
from quantgate.backends._extraction_context import case_context, case_input, prompt_examples, variant_context
from quantgate.decide._runtimes import _agreement as runtime_agreement
from quantgate.evaluate._evaluation_run import RunOptions, resume_evaluation, run_evaluation
from quantgate.inputs._dataset import Dataset, load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._store import read_records, read_summary
from tests.fakes import QueuedChatModel

DATA = Path(__file__).parents[2] / "data" / "per-case-tools"

RIGHT = {
    "weather in Paris": {"name": "get_weather", "arguments": {"city": "Paris"}},
    "50 euros in dollars": {"name": "convert_currency", "arguments": {"amount": 50, "to": "USD"}},
    "a share of ACME": {"name": "get_stock_price", "arguments": {"symbol": "ACME"}},
    "a joke": None,
}
"""Each case's gold call, by a piece of its text."""


def _answers(calls: Mapping[str, Any]) -> dict[str, str]:
    return {text: json.dumps({"call": call}) for text, call in calls.items()}


def _ref_and_quant(quant_calls: Mapping[str, Any]) -> VariantSet:
    """The reference answering every case right and a quantized variant answering `quant_calls`."""
    return VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model(
                name, QueuedChatModel(outputs=["{}"], by_text=_answers(calls)), quantization=q
            )
            for name, calls, q in (("ref", RIGHT, "F16"), ("quant", quant_calls, "Q4"))
        ],
    )


def _offered(schema: Mapping[str, Any]) -> tuple[str, ...]:
    branches = schema["properties"]["call"]["anyOf"]
    return tuple(b["properties"]["name"]["const"] for b in branches if b != {"type": "null"})


def test_each_case_is_prompted_constrained_and_scored_with_its_own_tools():
    dataset = load_dataset(DATA)
    wrong = {
        **RIGHT,
        "weather in Paris": {"name": "convert_currency", "arguments": {"amount": 1, "to": "EUR"}},
    }
    bound: dict[tuple[str, ...], QueuedChatModel] = {}

    def for_schema(schema: Mapping[str, Any]) -> QueuedChatModel:  # a backend's model per schema
        return bound.setdefault(_offered(schema), QueuedChatModel(outputs=["{}"], by_text=_answers(wrong)))

    unbound = QueuedChatModel(outputs=["{}"])
    extraction = variant_context(dataset, OpenedVariant(chat_model=unbound, for_schema=for_schema))
    context = EvaluationContext(extraction=extraction, scorer=dataset.scorer())
    out = graph.invoke({"cases": [case_input(c) for c in dataset.cases]}, context=context)

    # one model per tool set: the money and joke cases share one; the variant's own serves none
    assert set(bound) == {
        ("get_weather",),
        ("get_weather", "convert_currency"),
        ("get_weather", "get_stock_price"),
    }
    assert unbound.calls == []
    money = bound[("get_weather", "convert_currency")]
    assert sorted(str(call[-1].content) for call in money.calls) == [
        "How much is 50 euros in dollars?",
        "Tell me a joke.",
    ]
    system = money.calls[0][0]
    assert isinstance(system, SystemMessage)
    assert "- convert_currency: Convert an amount of money." in str(system.content)
    assert "- get_weather: The weather in a city." in str(system.content)
    assert "get_stock_price" not in str(system.content)
    assert money.calls[0][:-1] == money.calls[1][:-1]  # cases with the same tools: the same prefix
    assert (
        str(money.calls[0][2].content) == '{"call": {"name": "get_weather", "arguments": {"city": "Rome"}}}'
    )

    # the weather case is offered get_weather only: convert_currency is outside its schema, even
    # after the repairs (its answer is still scored: the wrong tool); the others are exact against
    # their own tools
    outcomes = {o.case_id: o for o in out["outcomes"]}
    assert outcomes["weather"].error_kind == "invalid_output"
    assert len(bound[("get_weather",)].calls) == 3  # the first answer and two repairs
    assert {i: o.score.fields.score for i, o in outcomes.items() if o.score.fields} == {
        "weather": 0.0,
        "money": 1.0,
        "stock": 1.0,
        "joke": 1.0,
    }
    figures = out["summary"].kind_figures
    assert isinstance(figures, ToolCallSummary)
    assert figures.exact_call_rate == pytest.approx(3 / 4)
    assert figures.argument_accuracy_by_name == {
        "convert_currency.amount": 1.0,
        "convert_currency.to": 1.0,
        "get_stock_price.symbol": 1.0,
    }
    # three calls: the money and stock cases' are valid for their tools, the weather case's calls a
    # tool it is not offered (valid for the dataset's tools taken together)
    assert figures.schema_validity == pytest.approx(2 / 3)


def test_a_run_on_a_dataset_with_case_tools_scores_each_case_against_its_own_tools(tmp_path):
    dataset = load_dataset(DATA)
    lower = {**RIGHT, "a share of ACME": {"name": "get_stock_price", "arguments": {"symbol": "acme"}}}
    variants = _ref_and_quant(lower)
    run_dir = run_evaluation(
        dataset, variants, options=RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False)
    )
    ref, quant = (entry.kind_figures for entry in read_summary(run_dir).variants)
    assert isinstance(ref, ToolCallSummary)
    assert isinstance(quant, ToolCallSummary)
    assert ref.exact_call_rate == 1.0
    assert ref.schema_validity == 1.0
    # "acme" breaks get_stock_price's pattern, which only the stock case is offered: no valid record
    # after the repairs, and its call is the invalid one of the variant's three (weather, money, stock)
    assert quant.tool_call_cases == 4
    assert quant.schema_validity == pytest.approx(2 / 3)
    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    stock = next(r for r in records if r["variant"] == "quant" and r["case_id"] == "stock")
    assert stock["error_kind"] == "invalid_output"
    assert stock["validation_errors"] == [
        "call: {'name': 'get_stock_price', 'arguments': {'symbol': 'acme'}} is not valid under any of the "
        "given schemas"
    ]


def test_an_example_that_brings_its_own_tools_shows_them_and_plain_examples_stay_as_they_were(tmp_path):
    plain = load_dataset(DATA)
    assert prompt_examples(plain) == [(e.text, e.expected) for e in plain.examples]  # unchanged
    root = tmp_path / "own-example"
    shutil.copytree(DATA, root)
    stock = json.loads((root / "cases.jsonl").read_text().splitlines()[2])["tools"]
    example = {
        "id": "example-stock",
        "text": "Price of one INTC share?",
        "expected": {"call": {"name": "get_stock_price", "arguments": {"symbol": "INTC"}}},
        "tools": stock,
    }
    with (root / "examples.jsonl").open("a") as examples:
        examples.write(json.dumps(example) + "\n")
    dataset = load_dataset(root)
    assert [text for text, _ in prompt_examples(dataset)] == [
        "Is it raining in Rome?",
        "(tools offered: get_weather, get_stock_price)\nPrice of one INTC share?",
    ]


def test_a_case_s_first_prompt_outside_the_graph_is_the_one_the_graph_sends():
    """Token fidelity, the noise floor's KLD and the load test build each case's first prompt
    outside the graph (`case_context`): with the case's own tools, as the graph does."""
    dataset = load_dataset(DATA)
    model = QueuedChatModel(outputs=["{}"], by_text=_answers(RIGHT))
    context = variant_context(dataset, OpenedVariant(chat_model=model))
    stock = next(c for c in dataset.cases if c.id == "stock")
    messages, _ = prompt_messages(case_context(context, dataset, "stock"), stock.text)
    graph.invoke(
        {"cases": [case_input(stock)]}, context=EvaluationContext(extraction=context, scorer=dataset.scorer())
    )
    assert model.calls == [messages]
    assert "get_stock_price" in str(messages[0].content)
    assert case_context(context, dataset, "stock") is case_context(context, dataset, "stock")


def test_a_resumed_run_rescores_each_recorded_case_against_its_own_tools(tmp_path):
    """A resumed run rescores the records it reads back (`_rescore`) and refuses one that scores
    otherwise than it was recorded: each case is rescored against its own tools, as it ran."""
    dataset = load_dataset(DATA)
    lower = {**RIGHT, "a share of ACME": {"name": "get_stock_price", "arguments": {"symbol": "acme"}}}

    def variants(*, stop: bool) -> VariantSet:
        quant: dict[str, Any] = _answers(lower)
        if stop:
            quant["a joke"] = KeyboardInterrupt()  # as by Ctrl-C, after its other cases
        return VariantSet(
            reference="ref",
            variants=[
                Variant.from_chat_model(
                    "ref", QueuedChatModel(outputs=["{}"], by_text=_answers(RIGHT)), quantization="F16"
                ),
                Variant.from_chat_model(
                    "quant", QueuedChatModel(outputs=["{}"], by_text=quant), quantization="Q4"
                ),
            ],
        )

    options = RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False)
    with pytest.raises(KeyboardInterrupt):
        run_evaluation(dataset, variants(stop=True), options=options)
    (run_dir,) = (tmp_path / "runs").iterdir()
    ref, quant = read_summary(
        resume_evaluation(run_dir, variant_set=variants(stop=False), progress=False)
    ).variants
    assert quant.resumed_cases == 3
    assert isinstance(quant.kind_figures, ToolCallSummary)
    assert quant.kind_figures.schema_validity == pytest.approx(2 / 3)  # the stock case's call, as it ran
    assert isinstance(ref.kind_figures, ToolCallSummary)
    assert ref.kind_figures.exact_call_rate == 1.0


def _own_tools_only(tmp_path: Path) -> Dataset:
    """tests/data/per-case-tools with task.json's `"tools": []`, every line bringing its tools (as
    BFCL's imports are)."""
    root = shutil.copytree(DATA, tmp_path / "own-tools-only")
    task = json.loads((root / "task.json").read_text())
    shared, task["tools"] = task["tools"], []
    (root / "task.json").write_text(json.dumps(task))
    for name in ("cases.jsonl", "examples.jsonl"):
        lines = [json.loads(line) for line in (root / name).read_text().splitlines() if line.strip()]
        for line in lines:
            own = {t["function"]["name"] for t in line.get("tools", [])}
            line["tools"] = [*line.get("tools", []), *(t for t in shared if t["function"]["name"] not in own)]
        (root / name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    return load_dataset(root)


def test_a_run_whose_task_offers_no_tools_scores_its_baselines_against_each_case_s_own(tmp_path):
    """task.json `"tools": []`, every case bringing its tools (as BFCL's imports are): the trivial
    baselines are scored against each case's tools too (they were scored against the task's, none,
    and the run stopped with an unexpected error)."""
    dataset = _own_tools_only(tmp_path)
    model = QueuedChatModel(outputs=["{}"], by_text=_answers(RIGHT))
    variants = VariantSet(
        reference="ref", variants=[Variant.from_chat_model("ref", model, quantization="F16")]
    )
    options = RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False)
    summary = read_summary(run_evaluation(dataset, variants, options=options))
    assert summary.baselines is not None
    assert summary.baselines.always_null == 0.25  # "no call" is right on the one case whose gold is none
    figures = summary.variants[0].kind_figures
    assert isinstance(figures, ToolCallSummary)
    assert figures.exact_call_rate == 1.0


def test_the_report_case_diffs_and_runtime_agreement_score_each_case_against_its_own_tools(tmp_path):
    """A run whose task offers no tools (BFCL's imports): the report's case diffs and a runtime
    pair's agreement score each case with its own tools (they took the task's, none, and the report
    of a real bfcl-multiple run failed with "a tool_calling task has no tools")."""
    dataset = _own_tools_only(tmp_path)
    wrong = {**RIGHT, "weather in Paris": {"name": "get_weather", "arguments": {"city": "Lyon"}}}
    variants = _ref_and_quant(wrong)
    options = RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False)
    run_dir = run_evaluation(dataset, variants, options=options)
    assert write_report(run_dir).is_file()
    diff = case_diff(load_run_view(run_dir), case_id="weather", variant="quant")
    assert diff.loc["call", "gold"] == {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert diff.loc["call", "variant"] == {"name": "get_weather", "arguments": {"city": "Lyon"}}
    assert (diff.loc["call", "variant_score"], diff.loc["call", "differs"]) == (0.0, True)
    records: dict[str, dict[str, CaseRecord]] = {}
    for record in read_records(run_dir):
        records.setdefault(record.variant, {})[record.case_id] = record
    agreement = runtime_agreement(
        list(records["ref"].values()), records["quant"], dataset.scorer(), ComparisonOptions()
    )
    assert agreement is not None
    assert (agreement.cases, agreement.overall) == (4, 0.75)  # the weather call differs, 3 of 4 agree
