"""Trivial baselines: always null and the majority value, scored as a model is, on hand-computed cases."""

import json
from typing import Any

import pytest

from evaluators import CaseScorer, aggregate
from evaluators.baselines import (
    above_baseline,
    always_null_record,
    baseline_accuracy,
    baseline_scores,
    majority_record,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": ["string", "null"]},
        "paid": {"type": ["boolean", "null"]},
        "contact": {
            "type": ["object", "null"],
            "properties": {"email": {"type": ["string", "null"]}, "phone": {"type": ["string", "null"]}},
        },
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}

GOLDS: dict[str, dict[str, Any] | None] = {
    "c1": {"name": "Ana", "paid": True, "contact": {"email": "a@x.org", "phone": None}, "tags": ["x"]},
    "c2": {"name": None, "paid": True, "contact": {"email": None, "phone": None}, "tags": []},
    "c3": {"name": "Luis", "paid": False, "contact": None, "tags": ["x"]},
    # keys in another order: the same canonical JSON as c2's contact
    "c4": {"paid": True, "contact": {"phone": None, "email": None}, "tags": ["x", "y"]},
    "c5": None,  # unlabeled: skipped
}
TAGS = {"c1": ["lang:es", "t1"], "c2": ["lang:en", "t1"], "c3": ["lang:es"], "c4": ["lang:en"]}
FIELDS = ["name", "paid", "contact.email", "contact.phone", "tags"]


@pytest.fixture(scope="module")
def scores():
    return baseline_scores(golds=GOLDS, tags=TAGS, schema=SCHEMA)


def test_always_null_record_has_every_top_level_property_null():
    assert always_null_record(schema=SCHEMA) == {"name": None, "paid": None, "contact": None, "tags": None}


def test_majority_record_takes_each_propertys_most_common_gold_value():
    labeled = [g for g in GOLDS.values() if g is not None]
    assert majority_record(golds=labeled, schema=SCHEMA) == {
        "name": None,  # null twice (c4 has no key: null), "Ana" and "Luis" once
        "paid": True,
        "contact": {"email": None, "phone": None},  # c2 and c4, whatever their key order
        "tags": ["x"],
    }


def test_majority_ties_go_to_the_value_seen_first_and_null_is_a_candidate():
    schema = {"type": "object", "properties": {"a": {"type": ["string", "null"]}, "b": {"type": "string"}}}
    golds = [{"a": "p", "b": "z"}, {"a": "q", "b": "y"}, {"a": "q"}, {"a": "p"}]
    assert majority_record(golds=golds, schema=schema) == {"a": "p", "b": None}  # b: null twice


def test_always_null_accuracy(scores):
    null = scores.always_null
    assert scores.cases == null.cases == 4
    # name: c2, c4 null; paid: never null; email: c2, c3, c4; phone: always; tags: c2's [] only
    assert null.fields == pytest.approx(
        {"name": 0.5, "paid": 0.0, "contact.email": 0.75, "contact.phone": 1.0, "tags": 0.25}
    )
    assert list(null.fields) == FIELDS
    assert null.field_accuracy == pytest.approx(10 / 20)
    assert null.field_accuracy_macro == pytest.approx((0.5 + 0 + 0.75 + 1 + 0.25) / 5)
    assert null.slices["t1"] == pytest.approx((0 + 0 + 0 + 1 + 0 + 1 + 0 + 1 + 1 + 1) / 10)


def test_majority_accuracy(scores):
    majority = scores.majority
    assert majority.cases == 4
    # tags ["x"]: c1 and c3 right, c2 a false positive, c4 F1 2/3 (precision 1, recall 1/2)
    assert majority.fields == pytest.approx(
        {"name": 0.5, "paid": 0.75, "contact.email": 0.75, "contact.phone": 1.0, "tags": (2 + 2 / 3) / 4}
    )
    assert majority.field_accuracy == pytest.approx((2 + 3 + 3 + 4 + 2 + 2 / 3) / 20)
    assert scores.best_field_accuracy == pytest.approx(majority.field_accuracy)
    assert scores.majority_record["paid"] is True


def test_baselines_are_what_the_models_scorer_gives_those_records(scores):
    scorer = CaseScorer(schema=SCHEMA)
    for record, baseline in ((scores.majority_record, scores.majority), ({}, scores.always_null)):
        model = aggregate(
            scorer(case_id=i, outputs=json.dumps(record), reference_outputs=g, tags=TAGS[i])
            for i, g in GOLDS.items()
            if g is not None
        )
        assert model.field_accuracy == pytest.approx(baseline.field_accuracy)
        assert model.fields == pytest.approx(baseline.fields)
        assert (
            above_baseline(field_accuracy=model.field_accuracy, baseline_accuracy=baseline.field_accuracy)
            is False
        )


def test_baseline_accuracy_over_a_variants_cases_keeps_the_runs_predictors(scores):
    # c1, c2: majority 7/10 (name 0+1, paid 2, email 0+1, phone 2, tags 1+0), always null 5/10
    assert baseline_accuracy(scores=scores, case_ids=["c1", "c2", "c5", "unknown", "c1"]) == pytest.approx(
        0.7
    )
    restricted = scores.restricted_to(["c1", "c2"])
    assert restricted.cases == 2
    assert restricted.always_null.field_accuracy == pytest.approx(0.5)
    assert restricted.majority_record == scores.majority_record
    # c2 alone: always null misses paid, the majority puts a tag where there is none
    assert scores.restricted_to(["c2"]).always_null.field_accuracy == pytest.approx(0.8)
    assert baseline_accuracy(scores=scores, case_ids=["c2"]) == pytest.approx(0.8)
    assert baseline_accuracy(scores=scores, case_ids=["c5"]) is None
    assert baseline_accuracy(scores=scores, case_ids=GOLDS) == pytest.approx(scores.best_field_accuracy)


def test_no_labeled_case_has_no_baseline():
    scores = baseline_scores(golds={"c1": None}, tags={}, schema=SCHEMA)
    assert scores.cases == 0
    assert scores.always_null.field_accuracy is None
    assert scores.majority.field_accuracy is None
    assert scores.always_null.fields == {}
    assert scores.best_field_accuracy is None
    assert scores.majority_record == {}
    assert baseline_accuracy(scores=scores, case_ids=["c1"]) is None


def test_arrays_of_objects_are_scored_per_sub_field():
    schema = {
        "type": "object",
        "properties": {
            "lines": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"sku": {"type": "string"}, "qty": {"type": ["integer", "null"]}},
                },
            }
        },
    }
    line = {"sku": "A-1", "qty": 2}
    golds: dict[str, dict[str, Any] | None] = {
        "c1": {"lines": [line]},
        "c2": {"lines": [dict(reversed(line.items()))]},
        "c3": {"lines": []},
    }
    scores = baseline_scores(golds=golds, tags={}, schema=schema)
    assert scores.majority_record == {"lines": [line]}
    # always null: only c3 (no lines) is right; the majority line: c1 and c2 right, c3 one extra line
    assert scores.always_null.fields == pytest.approx({"lines.sku": 1 / 3, "lines.qty": 1 / 3})
    assert scores.majority.fields == pytest.approx({"lines.sku": 2 / 3, "lines.qty": 2 / 3})
    assert scores.best_field_accuracy == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("accuracy", "baseline", "expected"),
    [
        (0.6, 0.5, True),
        (0.5, 0.5, False),
        (0.1 + 0.2, 0.3, False),  # the same figure summed in another order is a tie, not a win
        (0.4, 0.5, False),
        (None, 0.5, None),
        (0.5, None, None),
    ],
)
def test_above_baseline(accuracy, baseline, expected):
    assert above_baseline(field_accuracy=accuracy, baseline_accuracy=baseline) is expected
