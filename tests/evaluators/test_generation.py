"""Tests for evaluators/chrf.py: chrF figures cross-checked with sacrebleu called directly."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from sacrebleu.metrics.chrf import CHRF

from evaluators.case import CaseScorer
from evaluators.chrf import GenerationSummary, generated_text, score_text, summarize_generation
from evaluators.tasks import parse_task

GOLD = "The Eagle is a cheap coffee shop near Burger King."
CLOSE = "The Eagle is a cheap coffee shop by the river."
OTHER = "Fitzbillies serves Italian food."


def _sacrebleu_sentence(hypothesis: str, reference: str) -> float:
    return float(CHRF(char_order=6, word_order=0, beta=2).sentence_score(hypothesis, [reference]).score)


def test_case_score_is_sentence_chrf_over_100() -> None:
    result = score_text(outputs={"text": CLOSE}, reference_outputs={"text": GOLD})
    expected = _sacrebleu_sentence(CLOSE, GOLD) / 100
    assert 0.3 < expected < 0.9  # a partial match, not a degenerate one
    assert result.fields["text"].score == expected
    assert result.score == expected
    assert result.fields["text"].outcome == "partial"
    assert result.as_keys() == {"field:text": expected, "field:*": expected}


def test_identical_text_scores_one_and_surrounding_whitespace_is_ignored() -> None:
    result = score_text(outputs={"text": f"  {GOLD}\n"}, reference_outputs={"text": GOLD})
    assert result.score == 1.0
    assert result.fields["text"].outcome == "correct"


def test_unrelated_text_scores_what_sacrebleu_gives() -> None:
    result = score_text(outputs={"text": OTHER}, reference_outputs={"text": GOLD})
    assert result.score == _sacrebleu_sentence(OTHER, GOLD) / 100
    assert result.score is not None
    assert result.score < 0.3


@pytest.mark.parametrize(
    ("outputs", "outcome"),
    [
        (None, "no_output"),
        ({}, "missed"),
        ({"text": ""}, "missed"),
        ({"text": "   "}, "missed"),
        ({"text": None}, "missed"),
        ({"text": 42}, "missed"),
    ],
)
def test_missing_or_empty_text_scores_zero(outputs: dict[str, object] | None, outcome: str) -> None:
    result = score_text(outputs=outputs, reference_outputs={"text": GOLD})
    assert result.score == 0.0
    assert result.fields["text"].outcome == outcome
    assert result.fields["text"].expected == GOLD
    assert result.fields["text"].predicted is None


def test_empty_gold_follows_the_null_rules() -> None:
    """Agreement with a reference that produced an empty text: empty agrees, text does not."""
    assert score_text(outputs={"text": ""}, reference_outputs={"text": ""}).score == 1.0
    false_positive = score_text(outputs={"text": OTHER}, reference_outputs={"text": " "})
    assert false_positive.score == 0.0
    assert false_positive.fields["text"].outcome == "false_positive"


def test_generated_text() -> None:
    assert generated_text({"text": " a b "}) == "a b"
    assert generated_text(None) == ""
    assert generated_text({"label": "x"}) == ""


def test_summary_cross_checked_with_sacrebleu_and_hand_computed_ratios() -> None:
    gold = [{"text": "abcd"}, {"text": GOLD}, {"text": "Blue Spice is a pub."}]
    outputs = [{"text": "abcdef"}, {"text": CLOSE}, None]
    summary = summarize_generation(outputs=outputs, reference_outputs=gold)
    corpus = CHRF().corpus_score(["abcdef", CLOSE, ""], [["abcd", GOLD, "Blue Spice is a pub."]])
    assert summary.chrf == corpus.score / 100
    assert summary.generation_cases == 3
    # 6/4, 46/50, 0/20 characters
    assert (len(CLOSE), len(GOLD)) == (46, 50)
    assert summary.length_ratio == pytest.approx((6 / 4 + 46 / 50 + 0.0) / 3)
    assert summary.empty_text_share == pytest.approx(1 / 3)
    assert summary.chrf_reference is None
    assert summary.length_ratio_reference is None


def test_summary_against_the_reference_model_skips_its_empty_texts() -> None:
    gold = [{"text": GOLD}, {"text": GOLD}, {"text": OTHER}]
    outputs = [{"text": CLOSE}, {"text": ""}, {"text": OTHER}]
    reference = [{"text": GOLD}, {"text": "x y"}, None]
    summary = summarize_generation(outputs=outputs, reference_outputs=gold, reference_model_outputs=reference)
    against_reference = CHRF().corpus_score([CLOSE, ""], [[GOLD, "x y"]])
    assert summary.chrf_reference == against_reference.score / 100
    assert summary.length_ratio_reference == pytest.approx((46 / 50 + 0 / 3) / 2)
    assert summary.empty_text_share == pytest.approx(1 / 3)


def test_summary_without_gold_or_cases_is_not_measured() -> None:
    unlabeled = summarize_generation(outputs=[{"text": "a"}], reference_outputs=[None])
    assert (unlabeled.chrf, unlabeled.length_ratio) == (None, None)
    assert unlabeled.empty_text_share == 0.0
    empty = summarize_generation(outputs=[], reference_outputs=[], reference_model_outputs=[])
    assert empty.generation_cases == 0
    assert (empty.chrf, empty.chrf_reference, empty.empty_text_share) == (None, None, None)


def test_summary_refuses_different_cases() -> None:
    with pytest.raises(ValueError, match="not of the same cases"):
        summarize_generation(outputs=[{"text": "a"}], reference_outputs=[])
    with pytest.raises(ValueError, match="not of the same cases"):
        summarize_generation(outputs=[None], reference_outputs=[None], reference_model_outputs=[])


def test_summary_is_frozen_and_refuses_unknown_keys() -> None:
    assert GenerationSummary().kind == "generation"  # its tag in summary.json's `kind_figures`
    assert all(value is None for key, value in GenerationSummary() if key != "kind"), "nothing measured"
    summary = GenerationSummary(generation_cases=1)
    with pytest.raises(ValidationError):
        summary.generation_cases = 2
    with pytest.raises(ValidationError):
        GenerationSummary(generation_cases=1, bleu=0.5)  # type: ignore[call-arg]


def test_the_generation_kind_scores_with_score_text() -> None:
    task = parse_task({"kind": "generation"})
    scorer = CaseScorer(schema=task.record_schema() or {}, task=task)  # the kind's scorer, as a run scores
    assert [leaf.name for leaf in scorer.spec.leaves()] == ["text"]
    result = scorer.fields(outputs={"text": CLOSE}, reference_outputs={"text": GOLD}, lang="en")
    assert result.score == _sacrebleu_sentence(CLOSE, GOLD) / 100
