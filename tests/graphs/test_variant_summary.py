"""The evaluator nodes' registry: an entry is what adds a node to the evaluation graph, and the
graph's typed summary is what a variant's summary.json entry carries."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sacrebleu.metrics.chrf import CHRF

import graphs.evaluation
from evaluators import CaseScorer, DatasetScore, EvaluatorResult
from evaluators.chrf import GenerationSummary
from evaluators.classification_figures import ClassificationSummary
from evaluators.memory import MemoryReading, MemorySummary
from evaluators.tasks import ClassificationTask, GenerationTask
from evaluators.tool_calls import ToolCallSummary
from graphs.evaluation import CaseInput, EvaluationContext, build_evaluation_graph, graph
from graphs.extraction import ExtractionContext
from graphs.outcomes import retained
from graphs.variant_summary import EVALUATORS, EvaluatorNode, Evidence, VariantSummary, outcomes_summary
from quantgate.inputs._variants import Variant
from quantgate.rundir._build import variant_entry
from quantgate.rundir._summary import VariantEntry
from tests.fakes import GOOD, LABELS, SCHEMA, QueuedChatModel

FIXED_NODES = {"__start__", "judge_round", "run_case", "aggregate"}


class Answered(EvaluatorResult):
    """A part no summary has: for a node added to the registry in a test."""

    answered: int


def count_answered(evidence: Evidence) -> Answered:
    return Answered(answered=sum(o.extraction.valid for o in evidence.outcomes))


def test_the_graph_has_a_node_per_registry_entry_and_the_fixed_nodes() -> None:
    assert set(graph.get_graph().nodes) - {"__end__"} == FIXED_NODES | {n.name for n in EVALUATORS}


def test_a_registry_entry_is_what_adds_a_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graphs.evaluation, "EVALUATORS", (*EVALUATORS, EvaluatorNode(count_answered)))
    nodes = set(build_evaluation_graph().get_graph().nodes)
    assert "count_answered" in nodes
    monkeypatch.setattr(graphs.evaluation, "EVALUATORS", EVALUATORS[1:])
    assert EVALUATORS[0].name not in set(build_evaluation_graph().get_graph().nodes)


def test_each_node_makes_its_part_and_the_parts_are_the_summary() -> None:
    evidence = Evidence(outcomes=[], against_reference=True)
    for node in EVALUATORS:
        assert type(node.score(evidence)) is node.part
    assert VariantSummary.__bases__ == tuple(reversed([n.part for n in EVALUATORS]))  # keys in node order
    assert issubclass(VariantEntry, VariantSummary)


def test_a_summary_refuses_a_missing_a_repeated_or_a_foreign_part() -> None:
    parts = [node.score(Evidence(outcomes=[], against_reference=False)) for node in EVALUATORS]
    assert VariantSummary.of(parts).cases == 0
    with pytest.raises(TypeError, match="no part MemorySummary"):
        VariantSummary.of([part for part in parts if not isinstance(part, MemorySummary)])
    with pytest.raises(TypeError, match="DatasetScore: not a part of VariantSummary, or given twice"):
        VariantSummary.of([*parts, DatasetScore(cases=1)])
    with pytest.raises(TypeError, match="Answered"):
        VariantSummary.of([*parts, Answered(answered=1)])


def test_the_graph_summary_is_what_the_variant_entry_and_summary_json_carry() -> None:
    reading = MemoryReading(rss_before_load_mb=10, rss_after_load_mb=30, rss_peak_mb=40, samples=2)
    model = QueuedChatModel(outputs=[json.dumps(GOOD)], by_text={"case 1": "not json"})
    context = EvaluationContext(
        extraction=ExtractionContext(model=model, schema=SCHEMA),
        scorer=CaseScorer(schema=SCHEMA),
        reference_records={"c0": GOOD, "c1": GOOD},
        memory=lambda: reading,
    )
    cases = [CaseInput(id=f"c{i}", text=f"case {i}", expected=GOOD, tags=[]) for i in range(2)]
    out = graph.invoke({"cases": cases}, context=context)
    summary = out["summary"]
    assert isinstance(summary, VariantSummary)
    assert (summary.errors, summary.agreement_cases, summary.memory_mb) == (1, 2, 40)
    entry = variant_entry(
        Variant(name="Q", backend="test"), summary, {"wall_s": 1.0},
        is_reference=False, quantization=None, cases=["c0", "c1"], recorded=["c0", "c1"],
    )  # fmt: skip
    on_disk = json.loads(entry.model_dump_json())
    assert {key: on_disk[key] for key in VariantSummary.model_fields} == summary.model_dump(mode="json")
    again = outcomes_summary(out["outcomes"], against_reference=True, memory=MemorySummary.model_validate(
        summary.model_dump(include=set(MemorySummary.model_fields))
    ))  # fmt: skip
    assert again == summary


def test_a_figure_given_twice_to_the_entry_is_refused() -> None:
    summary = outcomes_summary([], against_reference=False, memory=MemorySummary())
    with pytest.raises(TypeError, match="memory_mb: a field of VariantSummary, given again"):
        variant_entry(
            Variant(name="Q", backend="test"), summary, {"memory_mb": 1.0},
            is_reference=False, quantization=None, cases=[], recorded=[],
        )  # fmt: skip


def _task_run(
    task: ClassificationTask | GenerationTask,
    answers: dict[str, dict[str, Any]],
    golds: list[dict[str, Any]],
    *,
    reference_records: dict[str, dict[str, Any] | None] | None = None,
) -> tuple[EvaluationContext, list[CaseInput]]:
    """A context and cases `c0`, `c1`, ... (texts `text 0`, ...) for a task: the model answers a text
    as `answers` says, and any other with invalid JSON (no repairs)."""
    model = QueuedChatModel(
        outputs=["not json"], by_text={text: json.dumps(record) for text, record in answers.items()}
    )
    context = EvaluationContext(
        extraction=ExtractionContext(model=model, schema=task.record_schema(), task=task, max_repairs=0),
        scorer=CaseScorer(schema=task.record_schema(), task=task),
        reference_records=reference_records,
    )
    cases = [CaseInput(id=f"c{i}", text=f"text {i}", expected=g, tags=[]) for i, g in enumerate(golds)]
    return context, cases


def test_a_classification_run_summary_carries_its_label_figures() -> None:
    # labels card_arrival, card_lost, top_up_failed; gold and predicted per case:
    #   c0 card_lost -> card_lost      c1 card_arrival -> card_lost   c2 top_up_failed -> no answer
    #   c3 card_lost -> card_lost      c4 card_arrival -> top_up_failed
    # confusion (rows gold; columns predicted, then no answer):
    #   card_arrival 0 1 1 0 | card_lost 0 2 0 0 | top_up_failed 0 0 0 1
    # F1 = 2TP / (2TP + FP + FN): card_arrival 0 (FN 2); card_lost 4/5 (TP 2, FP 1);
    # top_up_failed 0 (FP 1, FN 1); macro-F1 (0 + 4/5 + 0) / 3; label accuracy 2/5
    task = ClassificationTask(labels=tuple(LABELS))
    golds = ["card_lost", "card_arrival", "top_up_failed", "card_lost", "card_arrival"]
    answers = {"text 0": "card_lost", "text 1": "card_lost", "text 3": "card_lost", "text 4": "top_up_failed"}
    context, cases = _task_run(
        task, {t: {"label": a} for t, a in answers.items()}, [{"label": g} for g in golds]
    )
    summary = graph.invoke({"cases": cases}, context=context)["summary"]
    figures = summary.kind_figures
    assert isinstance(figures, ClassificationSummary)
    assert (figures.kind, figures.classification_cases, figures.no_answer) == ("classification", 5, 1)
    assert figures.label_accuracy == 2 / 5
    assert figures.confusion == [[0, 1, 1, 0], [0, 2, 0, 0], [0, 0, 0, 1]]
    assert figures.macro_f1 == pytest.approx(4 / 15)
    assert figures.classes is not None
    assert figures.classes["card_lost"].precision == pytest.approx(2 / 3)
    assert summary.field_accuracy == pytest.approx(2 / 5)  # the label field: the same figure
    again = outcomes_summary(
        graph.invoke({"cases": cases}, context=context)["outcomes"], against_reference=False,
        memory=MemorySummary(), task=task,
    )  # fmt: skip
    assert again.kind_figures == figures


@pytest.mark.parametrize("kind", ["classification", "generation"])
def test_outcomes_without_their_values_have_no_kind_figures_rather_than_an_error(kind: str) -> None:
    # outcomes kept without each field's values (as the reference cache once served them): the gold
    # is unknown, so the kind's figures are not measured (None), never an error nor a wrong figure
    task: ClassificationTask | GenerationTask
    if kind == "classification":
        task, gold = ClassificationTask(labels=tuple(LABELS)), {"label": "card_lost"}
    else:
        task, gold = GenerationTask(), {"text": "A is a place."}
    context, cases = _task_run(task, {"text 0": gold}, [gold])
    outcomes = graph.invoke({"cases": cases}, context=context)["outcomes"]
    assert outcomes[0].score.fields.fields[next(iter(gold))].expected  # the graph kept the values
    bare = [retained(o, keep_record=True, keep_values=False) for o in outcomes]
    summary = outcomes_summary(bare, against_reference=False, memory=MemorySummary(), task=task)
    assert summary.kind_figures is None
    kept = outcomes_summary(outcomes, against_reference=False, memory=MemorySummary(), task=task).kind_figures
    assert kept is not None
    figure = "label_accuracy" if kind == "classification" else "chrf"
    assert (kept.kind, getattr(kept, figure)) == (kind, 1.0)


def test_a_generation_run_summary_carries_its_chrf_figures() -> None:
    # c0 and c1 answer, c2 gives no valid record; the reference wrote `reference` (none for c2)
    task = GenerationTask()
    golds = ["The Eagle is a cheap coffee shop.", "Blue Spice is a pub near Burger King.", "Zizzi is a pub."]
    outputs = {"text 0": "The Eagle is a coffee shop.", "text 1": "Blue Spice is a pub."}
    reference = {
        "c0": {"text": "The Eagle is a cheap pub."},
        "c1": {"text": "Blue Spice, a pub."},
        "c2": None,
    }
    answers = {text: {"text": value} for text, value in outputs.items()}
    context, cases = _task_run(task, answers, [{"text": g} for g in golds], reference_records=reference)
    summary = graph.invoke({"cases": cases}, context=context)["summary"].kind_figures
    assert isinstance(summary, GenerationSummary)
    texts = [outputs["text 0"], outputs["text 1"], ""]
    assert summary.chrf == CHRF().corpus_score(texts, [golds]).score / 100
    # against the reference: c0 and c1 only (it wrote nothing for c2)
    against = CHRF().corpus_score(texts[:2], [["The Eagle is a cheap pub.", "Blue Spice, a pub."]])
    assert summary.chrf_reference == against.score / 100
    assert summary.length_ratio == pytest.approx((27 / 33 + 20 / 37 + 0 / 15) / 3)
    assert summary.length_ratio_reference == pytest.approx((27 / 25 + 20 / 18) / 2)
    assert summary.generation_cases == 3
    assert summary.empty_text_share == pytest.approx(1 / 3)
    again = outcomes_summary(
        graph.invoke({"cases": cases}, context=context)["outcomes"], against_reference=True,
        memory=MemorySummary(), task=task,
    )  # fmt: skip
    assert again.kind_figures == summary


def test_an_extraction_run_has_no_kind_figures() -> None:
    summary = outcomes_summary([], against_reference=False, memory=MemorySummary())
    assert summary.kind_figures is None
    assert not {*GenerationSummary.model_fields, *ToolCallSummary.model_fields} & set(
        type(summary).model_fields
    )
