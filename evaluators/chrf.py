"""Scoring of generated text (task kind `generation`): chrF against a gold text.

A generation case's record is `{"text": "..."}`. Its score is sentence chrF against the gold
text, divided by 100 so that it lies in [0, 1] like every other case score. chrF is sacrebleu's
`CHRF` with its default settings, chrF2: character n-grams up to 6, no word n-grams, recall
weighted twice as much as precision (beta = 2), whitespace ignored. A variant's figures
(`GenerationSummary`) are corpus chrF, against the gold and against the reference model's texts,
the mean length ratio and the share of empty outputs.

A missing record, a missing `text` key, a value that is not a string, and a blank string all count
as an empty text, as a blank string counts as null in `evaluators.fields`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field
from sacrebleu.metrics.chrf import CHRF

from evaluators.aggregate import mean
from evaluators.fields import FieldAccuracy, FieldScore, Outcome
from evaluators.matchers import MatchOptions
from evaluators.results import KindFigures
from evaluators.schema import FieldSpec

__all__ = ["TEXT_FIELD", "GenerationSummary", "generated_text", "score_text", "summarize_generation"]

TEXT_FIELD = "text"
"""The one field of a generation record."""

_CHRF = CHRF()
"""chrF2 with sacrebleu's defaults (char_order=6, word_order=0, beta=2)."""


def generated_text(record: Mapping[str, Any] | None) -> str:
    """The text of a generation record, stripped; "" for no record, no text or a non-string."""
    if record is None:
        return ""
    value = record.get(TEXT_FIELD)
    return value.strip() if isinstance(value, str) else ""


def score_text(
    *,
    outputs: Mapping[str, Any] | None,
    reference_outputs: Mapping[str, Any],
    task: object = None,
    spec: FieldSpec | None = None,
    options: MatchOptions | None = None,
    lang: str | None = None,
) -> FieldAccuracy:
    """Score one generated text against the gold text (or the reference model's text).

    The kind's case scorer in `evaluators.kinds.TASK_KINDS` (its `CaseFieldScorer` signature).

    Args:
        outputs: The predicted record `{"text": ...}`; None when the system produced nothing
            usable (the field scores 0, outcome `no_output`).
        reference_outputs: The gold record.
        task: Unused: the task, `spec`, `options` and `lang` are part of the scorer signature
            every kind shares, and chrF needs none of them.
        spec: Unused.
        options: Unused.
        lang: Unused (chrF works on characters, whatever the language).

    Returns:
        One field, `text`, scoring sentence chrF / 100. An empty text against a non-empty gold
        scores 0 (`missed`); a text against an empty gold scores 0 (`false_positive`); both
        empty score 1.
    """
    gold = generated_text(reference_outputs)
    predicted = generated_text(outputs)
    outcome: Outcome
    if outputs is None:
        score, outcome = 0.0, "no_output"
    elif not gold or not predicted:
        score, outcome = (
            (1.0, "correct") if gold == predicted else (0.0, "missed" if gold else "false_positive")
        )
    else:
        score = _CHRF.sentence_score(predicted, [gold]).score / 100
        outcome = "correct" if score == 1.0 else ("wrong" if score == 0.0 else "partial")
    field = FieldScore(
        field=TEXT_FIELD,
        score=score,
        outcome=outcome,
        expected=gold or None,
        predicted=predicted or None,
    )
    return FieldAccuracy(fields={TEXT_FIELD: field})


class GenerationSummary(KindFigures):
    """A variant's figures on a generation dataset (its `kind_figures` in summary.json); each None
    when not measured.

    Attributes:
        generation_cases: Cases scored (every case, including those without output).
        chrf: Corpus chrF2 / 100 against the gold texts, over the cases with a gold text; an empty
            or missing output counts as the empty text.
        chrf_reference: Corpus chrF2 / 100 against the reference model's texts, over the cases the
            reference answered with a non-empty text (None: this is the reference, or not measured).
        length_ratio: Mean over the cases with a gold text of output characters / gold characters
            (stripped; an empty output counts as 0).
        length_ratio_reference: The same against the reference model's texts.
        empty_text_share: Share of cases whose output is missing or empty.
    """

    kind: Literal["generation"] = "generation"
    generation_cases: int | None = Field(
        default=None, description="Cases scored, including those without output."
    )
    chrf: float | None = Field(default=None, description="Corpus chrF2 / 100 against the gold texts.")
    chrf_reference: float | None = Field(
        default=None, description="Corpus chrF2 / 100 against the reference model's texts."
    )
    length_ratio: float | None = Field(
        default=None, description="Mean of output characters / gold characters."
    )
    length_ratio_reference: float | None = Field(
        default=None, description="Mean of output characters / the reference model's characters."
    )
    empty_text_share: float | None = Field(default=None, description="Share of missing or empty outputs.")


def _against(outputs: Sequence[str], targets: Sequence[str]) -> tuple[float | None, float | None]:
    """Corpus chrF / 100 and mean length ratio over the pairs whose target is not empty."""
    pairs = [(o, t) for o, t in zip(outputs, targets, strict=True) if t]
    if not pairs:
        return None, None
    hypotheses = [o for o, _ in pairs]
    chrf = _CHRF.corpus_score(hypotheses, [[t for _, t in pairs]]).score / 100
    return chrf, mean(len(o) / len(t) for o, t in pairs)


def summarize_generation(
    *,
    outputs: Sequence[Mapping[str, Any] | None],
    reference_outputs: Sequence[Mapping[str, Any] | None],
    reference_model_outputs: Sequence[Mapping[str, Any] | None] | None = None,
) -> GenerationSummary:
    """A variant's generation figures from its records, case by case in the same order.

    Args:
        outputs: The variant's records (None where it produced nothing usable).
        reference_outputs: The gold records (None for a case without gold).
        reference_model_outputs: The reference model's records on the same cases; None for the
            reference itself or when it was not run.

    Raises:
        ValueError: The sequences differ in length (not the same cases).
    """
    lengths = {len(outputs), len(reference_outputs)}
    if reference_model_outputs is not None:
        lengths.add(len(reference_model_outputs))
    if len(lengths) > 1:
        raise ValueError("the outputs, the gold and the reference model's records are not of the same cases")
    texts = [generated_text(o) for o in outputs]
    gold = [generated_text(g) for g in reference_outputs]
    chrf, ratio = _against(texts, gold)
    summary = GenerationSummary(
        generation_cases=len(texts),
        chrf=chrf,
        length_ratio=ratio,
        empty_text_share=mean(0.0 if t else 1.0 for t in texts),
    )
    if reference_model_outputs is None:
        return summary
    chrf_ref, ratio_ref = _against(texts, [generated_text(r) for r in reference_model_outputs])
    return summary.model_copy(update={"chrf_reference": chrf_ref, "length_ratio_reference": ratio_ref})
