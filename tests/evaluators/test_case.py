import pytest

from evaluators import CaseScorer, case_language

from .schemas import GOLD, INVOICE


@pytest.mark.parametrize(
    ("tags", "expected"),
    [(["lang:fr"], "fr"), (("numbers", "lang:de-CH"), "de-CH"), (["numbers"], None), ([], None)],
)
def test_case_language_from_tags(tags, expected):
    assert case_language(tags) == expected


def _field_scores(score):
    assert score.fields is not None
    return {name: f.score for name, f in score.fields.fields.items()}


def test_scorer_reads_fields_in_the_language_of_the_tags():
    scorer = CaseScorer(schema=INVOICE)
    gold = {**GOLD, "issue_date": "2024-04-03"}
    predicted = {**GOLD, "total": "1.234,56 €", "issue_date": "03/04/2024"}
    french = _field_scores(scorer(case_id="a", outputs=predicted, reference_outputs=gold, tags=["lang:fr"]))
    english = _field_scores(scorer(case_id="b", outputs=predicted, reference_outputs=gold, tags=["lang:en"]))
    untagged = _field_scores(scorer(case_id="c", outputs=predicted, reference_outputs=gold))
    assert (french["issue_date"], french["total"]) == (1.0, 1.0)
    assert english["issue_date"] == 0.0  # en-US: March 4
    assert untagged["issue_date"] == 0.0  # ambiguous without a language
