"""Paired comparison of a variant with the reference, on hand-made per-case scores."""

from __future__ import annotations

import pytest

from evaluators.comparison import (
    ComparisonOptions,
    PairedCase,
    compare_paired,
    paired_delta,
    regressions,
    summarize_agreement,
)

OPTIONS = ComparisonOptions(min_cases=3, resamples=2000)


def _case(i: int, reference: dict[str, float], variant: dict[str, float], *tags: str) -> PairedCase:
    return PairedCase(case_id=f"c{i}", tags=tags, reference=reference, variant=variant)


def test_identical_outputs_on_few_cases_are_not_shown_equivalent() -> None:
    """12 identical cases: the descriptive bootstrap is [0, 0], but a valid interval cannot rule
    out a variant that fails a case in ten, so the verdict stays inconclusive."""
    cases = [_case(i, {"a": 1.0, "b": 0.0}, {"a": 1.0, "b": 0.0}, "lang:en") for i in range(12)]
    comparison = compare_paired(cases, options=OPTIONS)
    overall = comparison.overall
    assert overall.delta == 0.0
    assert overall.descriptive_interval is not None
    assert (overall.descriptive_interval.low, overall.descriptive_interval.high) == (0.0, 0.0)
    assert "descriptive" in overall.descriptive_interval.method
    assert overall.interval is not None
    assert overall.interval.low < -0.2 < 0.2 < overall.interval.high
    assert "fixed sample" in overall.interval.method
    assert overall.verdict == "inconclusive"
    assert overall.mcnemar_p == 1.0
    assert comparison.slices["lang:en"].cases == 12


def test_identical_outputs_on_many_cases_are_equivalent() -> None:
    cases = [_case(i, {"a": 1.0, "b": 0.0}, {"a": 1.0, "b": 0.0}) for i in range(300)]
    overall = compare_paired(cases, options=OPTIONS).overall
    assert overall.interval is not None
    assert -0.02 < overall.interval.low <= 0.0 <= overall.interval.high < 0.02
    assert overall.verdict == "equivalent"


def test_a_variant_that_loses_a_field_everywhere_is_worse() -> None:
    cases = [_case(i, {"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 0.0}) for i in range(20)]
    comparison = compare_paired(cases, options=OPTIONS)
    assert comparison.overall.reference == 1.0
    assert comparison.overall.variant == 0.5
    assert comparison.overall.delta == -0.5
    assert comparison.overall.verdict == "worse"
    assert comparison.overall.reference_only == 20  # every case was exactly right for the reference only
    assert comparison.overall.mcnemar_p == pytest.approx(2 * 0.5**20)
    assert comparison.fields["a"].verdict == "inconclusive"  # 20 identical cases: too few to show it
    assert comparison.fields["b"].delta == -1.0
    assert comparison.fields["b"].verdict == "worse"


def test_slices_pair_only_the_cases_carrying_the_tag() -> None:
    cases = [
        _case(0, {"a": 1.0}, {"a": 0.0}, "numbers"),
        _case(1, {"a": 1.0}, {"a": 1.0}, "dates"),
        _case(2, {"a": 0.0}, {"a": 1.0}, "dates"),
    ]
    comparison = compare_paired(cases, options=OPTIONS)
    assert comparison.slices["numbers"].cases == 1
    assert comparison.slices["numbers"].delta == -1.0
    assert comparison.slices["numbers"].verdict == "inconclusive"  # 1 case < min_cases
    assert comparison.slices["dates"].delta == 0.5
    assert comparison.slices["dates"].variant_only == 1


def test_paired_delta_refuses_unequal_lengths() -> None:
    with pytest.raises(ValueError, match="same length"):
        paired_delta(reference=[1.0], variant=[], reference_correct=[True], variant_correct=[])


def test_no_cases_gives_no_figures() -> None:
    comparison = compare_paired([], options=OPTIONS)
    assert comparison.overall.delta is None
    assert comparison.overall.interval is None
    assert comparison.overall.mcnemar_p is None
    assert comparison.overall.verdict == "inconclusive"


def test_regressions_are_fields_right_for_the_reference_only() -> None:
    cases = [
        _case(0, {"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 0.5}, "lists"),
        _case(1, {"a": 0.0, "b": 1.0}, {"a": 1.0, "b": 1.0}),
        _case(2, {"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 0.0}),
    ]
    found = regressions(cases)
    assert [(r.case_id, r.fields) for r in found] == [("c0", ("b",)), ("c2", ("a",))]
    assert found[0].tags == ("lists",)
    assert found[0].variant_score == 0.75


def test_agreement_summary_per_field_and_overall() -> None:
    per_case = [{"a": 1.0, "b": 0.0}, {"a": 1.0, "b": 1.0}, {"a": 0.0, "b": 1.0}, {"a": 1.0}]
    summary = summarize_agreement(per_case, options=OPTIONS)
    assert summary.cases == 4
    assert summary.overall == pytest.approx((0.5 + 1.0 + 0.5 + 1.0) / 4)
    mean_a, interval_a = summary.fields["a"]
    assert mean_a == 0.75
    assert interval_a is not None
    assert 0.0 <= interval_a.low <= 0.75 <= interval_a.high <= 1.0
    assert summary.fields["b"][0] == pytest.approx(2 / 3)
    assert summarize_agreement([]).overall is None
