"""The generation kind: a text (a summary, a description from data, ...) against a gold text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaluators.format import FormatProblem
from evaluators.generation import generated_text, score_text
from evaluators.kinds.kind import FigureTable, KindFigure, TaskKind
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
    scorer_module="evaluators/generation.py",
    parse=parse_task,
    instruction=_instruction,
    shown_value=generated_text,
    title="Generation",
    figure_tables=(_FIGURES,),
    opener="open_generator",
)
"""Generation: sentence chrF per case (`evaluators.generation`); corpus chrF per variant."""
