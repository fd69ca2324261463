"""A task kind added from outside the package: a toy `yes_no` kind registered here (and removed
again) goes through the parts that ask a task's kind object: task.json parsing, the gold check,
the prompt, a case run with a fake chat model and its score, what outcomes keep, its own figures
per variant (made by the kind, kept in summary.json's `kind_figures` and read back), what a failure
shows, the figure section under a run, the report's title and the production opener."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import pytest
from pydantic import ValidationError

from evaluators.case import CaseScorer
from evaluators.format import FormatProblem
from evaluators.kinds import (
    TASK_KINDS,
    FigureTable,
    KindFigure,
    KindFigures,
    LabeledCase,
    TaskKind,
    check_expected,
    kind_named,
    parse_task,
    register_kind,
    unregister_kind,
)
from evaluators.kinds.kind import score_by_field
from evaluators.memory import MemorySummary
from evaluators.task_models import TaskModel
from graphs.evaluation import CaseInput, CaseOutcome, EvaluationContext
from graphs.evaluation import graph as evaluation
from graphs.extraction import ExtractionContext, ExtractionResult, graph
from graphs.outcomes import keeps_values
from graphs.prompting import build_messages
from graphs.variant_summary import outcomes_summary
from quantgate.render._task_figures import task_figures, task_kind_of
from quantgate.rundir._jsonfile import read_model, write_model
from quantgate.rundir._summary import DatasetInfo, RunSummary, VariantEntry
from tests.fakes import QueuedChatModel


class YesNoTask(TaskModel):
    """Answer a yes/no question about the text."""

    kind: Literal["yes_no"] = "yes_no"
    question: str

    def summary(self) -> str:
        return self.kind

    def record_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"answer": {"type": "boolean"}},
            "required": ["answer"],
            "additionalProperties": False,
        }


def _check(task: YesNoTask, expected: Mapping[str, Any]) -> list[FormatProblem]:
    if not isinstance(expected.get("answer"), bool):
        return [FormatProblem(path="expected.answer", message="true or false")]
    return []


class YesNoFigures(KindFigures):
    """The toy kind's figures per variant."""

    kind: Literal["yes_no"] = "yes_no"
    right_answers: float | None = None
    answered_yes: int | None = None


def _figures(task: YesNoTask, cases: Sequence[LabeledCase], *, against_reference: bool) -> YesNoFigures:
    scored = [case.fields["answer"] for case in cases]
    right = sum(s.score for s in scored) / len(scored) if scored else None
    return YesNoFigures(right_answers=right, answered_yes=sum(s.predicted is True for s in scored))


ANSWER = 'Answer with {"answer": true} or {"answer": false}.'

YES_NO = TaskKind(
    model=YesNoTask,
    score=score_by_field,
    check_expected=_check,
    instruction=lambda task, schema: f"{task.question} " + ANSWER,
    shown_value=lambda record: "yes" if record.get("answer") else "no",
    title="Yes or no",
    figures_model=YesNoFigures,
    make_figures=_figures,
    figure_tables=(
        FigureTable(
            shown="yes/no",
            figures=(KindFigure(key="right_answers", title="right answers"),),
            note="right answers: share of cases answered as the gold",
        ),
    ),
    opener="open_yes_no",
)


@pytest.fixture
def yes_no() -> Iterator[TaskKind]:
    register_kind(YES_NO)
    yield YES_NO
    unregister_kind("yes_no")
    assert "yes_no" not in TASK_KINDS


def _task() -> Any:
    """The toy task as task.json gives it (typed Any: the package's `Task` union lists the built-ins)."""
    return parse_task({"kind": "yes_no", "question": "Is the invoice paid?"})


def test_a_toy_kind_parses_checks_its_gold_and_is_refused_twice(yes_no):
    task = _task()
    assert task == YesNoTask(question="Is the invoice paid?")
    assert check_expected(task, {"answer": True}) == []
    assert [p.path for p in check_expected(task, {"answer": "yes"})] == ["expected.answer"]
    with pytest.raises(ValueError, match="'yes_no' is registered already"):
        register_kind(YES_NO)


def test_a_toy_kind_runs_a_case_with_its_prompt_and_its_scorer(yes_no):
    task = _task()
    schema = task.record_schema()
    messages = build_messages(schema=schema, examples=[], text="Paid in full on 3 March.", task=task)
    assert messages[0].content == 'Is the invoice paid? Answer with {"answer": true} or {"answer": false}.'
    model = QueuedChatModel(outputs=['{"answer": true}'])
    context = ExtractionContext(model=model, schema=schema, task=task)
    result = ExtractionResult.from_output(graph.invoke({"text": "Paid in full on 3 March."}, context=context))
    assert result.record == {"answer": True}
    assert model.calls[0][0].content == messages[0].content
    scorer = CaseScorer(schema=schema, task=task)
    assert scorer.fields(outputs=result.record, reference_outputs={"answer": True}, lang=None).score == 1.0
    assert scorer.fields(outputs=result.record, reference_outputs={"answer": False}, lang=None).score == 0.0
    assert keeps_values(task) is True


def _outcomes(task: Any, answers: list[bool], golds: list[bool]) -> list[CaseOutcome]:
    """The graph's outcomes of the toy task's cases, answered by a fake chat model: case i's answer is
    `answers[i]` whatever order the graph runs the cases in (it runs them concurrently)."""
    schema = task.record_schema()
    by_case = {f"text {i}": json.dumps({"answer": a}) for i, a in enumerate(answers)}
    model = QueuedChatModel(outputs=["not used"], by_text=by_case)
    context = EvaluationContext(
        extraction=ExtractionContext(model=model, schema=schema, task=task, max_repairs=0),
        scorer=CaseScorer(schema=schema, task=task),
    )
    cases = [
        CaseInput(id=f"c{i}", text=f"text {i}", expected={"answer": g}, tags=[]) for i, g in enumerate(golds)
    ]
    outcomes: list[CaseOutcome] = evaluation.invoke({"cases": cases}, context=context)["outcomes"]
    return outcomes


def test_a_toy_kind_makes_its_own_figures_which_summary_json_keeps(yes_no, tmp_path):
    task = _task()
    outcomes = _outcomes(task, answers=[True, False, True, True], golds=[True, True, False, True])
    summary = outcomes_summary(outcomes, against_reference=False, memory=MemorySummary(), task=task)
    assert summary.kind_figures == YesNoFigures(right_answers=0.5, answered_yes=3)  # c0, c3 right
    run = RunSummary(
        run_id="r1",
        quantgate_version="test",
        status="complete",
        dataset=DatasetInfo(name="x", path="x", sha256="x", cases=4, task="yes_no"),
        variants=[VariantEntry.extending(summary, name="R", backend="test", is_reference=True)],
    )
    write_model(tmp_path / "summary.json", run)
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["variants"][0]["kind_figures"] == {
        "kind": "yes_no",
        "right_answers": 0.5,
        "answered_yes": 3,
    }
    read = read_model(tmp_path / "summary.json", RunSummary)
    assert read.variants[0].kind_figures == YesNoFigures(right_answers=0.5, answered_yes=3)


def test_a_toy_kinds_figures_title_and_failures_come_from_its_object(yes_no):
    summary = RunSummary(
        run_id="r1",
        quantgate_version="test",
        status="complete",
        dataset=DatasetInfo(name="x", path="x", sha256="x", cases=4, task="yes_no"),
        variants=[
            VariantEntry(
                name="R", backend="test", is_reference=True, kind_figures=YesNoFigures(right_answers=1.0)
            ),
            VariantEntry(name="Q", backend="test", kind_figures=YesNoFigures(right_answers=0.75)),
        ],
    )
    figures = task_figures(summary)
    assert figures is not None
    assert (figures.kind, figures.header, figures.rows) == (
        "yes/no",
        ["variant", "right answers"],
        [["R *", "100.0%"], ["Q", "75.0%"]],
    )
    assert figures.note == "right answers: share of cases answered as the gold"
    assert task_kind_of(summary) == "yes/no"
    assert kind_named("yes_no").title == "Yes or no"
    assert kind_named("yes_no").shown_value({"answer": False}) == "no"


def test_without_the_toy_kind_its_runs_read_as_extraction():
    assert kind_named("yes_no") is kind_named(None) is TASK_KINDS["extraction"]


def test_without_the_toy_kind_its_figures_are_refused_by_name():
    entry = {"name": "R", "backend": "test", "kind_figures": {"kind": "yes_no", "right_answers": 0.5}}
    with pytest.raises(ValidationError, match="kind_figures") as caught:
        VariantEntry.model_validate(entry)
    assert "'yes_no'" in str(caught.value)  # the tag that no registered kind has
