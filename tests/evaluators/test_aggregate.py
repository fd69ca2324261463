import pytest

from evaluators import CaseScorer, aggregate

from .schemas import GOLD, INVOICE


def test_micro_macro_slices_and_format():
    scorer = CaseScorer(schema=INVOICE)
    wrong_vendor = {**GOLD, "vendor": "Otro"}
    scores = [
        scorer(case_id="a", outputs=GOLD, reference_outputs=GOLD, tags=["lang:es"]),
        scorer(case_id="b", outputs=wrong_vendor, reference_outputs=GOLD, tags=["lang:es", "numbers"]),
        scorer(case_id="c", outputs="not json", reference_outputs=GOLD, tags=["lang:en"]),
    ]
    summary = aggregate(scores)
    n_fields = 11
    assert summary.cases == 3
    assert summary.field_accuracy == pytest.approx((n_fields + n_fields - 1) / (3 * n_fields))
    assert summary.fields["vendor"] == pytest.approx(1 / 3)
    assert summary.fields["total"] == pytest.approx(2 / 3)
    assert summary.field_accuracy_macro == pytest.approx(
        sum(v or 0.0 for v in summary.fields.values()) / n_fields
    )
    assert summary.format_validity == pytest.approx(2 / 3)
    assert summary.slices["lang:en"] == 0.0
    assert summary.slices["numbers"] == pytest.approx((n_fields - 1) / n_fields)
    assert summary.slice_cases == {"lang:en": 1, "lang:es": 2, "numbers": 1}


def test_unlabeled_cases_have_no_accuracy():
    scorer = CaseScorer(schema=INVOICE)
    summary = aggregate([scorer(case_id="a", outputs=GOLD, reference_outputs=None)])
    assert summary.field_accuracy is None
    assert summary.field_accuracy_macro is None
    assert summary.fields == {}
    assert summary.format_validity == 1.0


def test_empty_input_has_no_means():
    summary = aggregate([])
    assert summary.field_accuracy is None
    assert summary.format_validity is None
