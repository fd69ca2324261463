"""The generation kind: a text (a summary, a description from data, ...) against a gold text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaluators.chrf import (
    TEXT_FIELD,
    GenerationSummary,
    generated_text,
    score_text,
    summarize_generation,
)
from evaluators.format import FormatProblem
from evaluators.kinds.kind import FigureTable, KindFigure, LabeledCase, TaskKind, gold_kept
from evaluators.task_models import GenerationTask, parse_task

__all__ = ["GENERATION"]

_RATIO = "{:.2f}"


def _check(task: GenerationTask, expected: Mapping[str, Any]) -> list[FormatProblem]:
    if not isinstance(expected.get("text"), str):
        return [FormatProblem(path="expected.text", message="a generation case needs its gold text")]
    return []


def _instruction(task: GenerationTask, schema: Mapping[str, Any]) -> str:
    instruction = task.instruction or "Write the text that the input asks for."
    return f'{instruction} Answer with one JSON object: {{"text": "the text"}}.'


def _text_record(value: Any) -> dict[str, Any] | None:
    return None if value is None else {TEXT_FIELD: value}


def _figures(
    task: GenerationTask, cases: Sequence[LabeledCase], *, against_reference: bool
) -> GenerationSummary | None:
    """chrF against the gold and the reference's texts, length ratios, empty texts. The texts are
    the `text` field's values: the variant's and the gold as its score has them, the reference's as
    its agreement has them (a case the reference did not answer has none); none when a case's gold
    text was not kept."""
    scored = [case.fields[TEXT_FIELD] for case in cases]
    if not gold_kept(scored):
        return None
    reference = [case.agreement[TEXT_FIELD].expected if case.agreement else None for case in cases]
    return summarize_generation(
        outputs=[_text_record(s.predicted) for s in scored],
        reference_outputs=[_text_record(s.expected) for s in scored],
        reference_model_outputs=[_text_record(r) for r in reference] if against_reference else None,
    )


_FIGURES = FigureTable(
    shown="generation",
    figures=(
        KindFigure(key="chrf", title="chrF vs gold", template="{:.1f}", scale=100.0),
        KindFigure(key="chrf_reference", title="chrF vs reference", template="{:.1f}", scale=100.0),
        KindFigure(key="length_ratio", title="length ratio vs gold", template=_RATIO),
        KindFigure(key="length_ratio_reference", title="length ratio vs reference", template=_RATIO),
        KindFigure(key="empty_text_share", title="empty texts"),
    ),
    note="chrF (0-100, corpus chrF2) against the gold texts and against the reference "
    "model's; length ratio: output / target characters; empty texts: missing or empty outputs",
)

GENERATION = TaskKind(
    model=GenerationTask,
    score=score_text,
    check_expected=_check,
    scorer_module="evaluators/chrf.py",
    parse=parse_task,
    instruction=_instruction,
    shown_value=generated_text,
    title="Generation",
    case_score_title="chrF",
    figures_model=GenerationSummary,
    make_figures=_figures,
    figure_tables=(_FIGURES,),
    opener="open_generator",
)
"""Generation: sentence chrF per case (`evaluators.chrf`); corpus chrF per variant."""
