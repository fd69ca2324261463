"""Expected cost per 1,000 extractions, checked against figures computed by hand."""

from __future__ import annotations

import pytest

from evaluators.costs import (
    CaseFigures,
    CostIngredient,
    VariantCosts,
    break_even_wrong_case_rate,
    variant_costs,
)
from quantgate.inputs._prices import Prices

PRICES = Prices(
    review_per_case=4.0, retry_call=0.5, node_per_hour=3.6, memory_per_gib_hour=0.36, energy_per_1k_tokens=2.0
)
VARIANT = {
    "c1": CaseFigures(wrong_fields=(), extra_calls=0, output_tokens=100, busy_s=10.0),
    "c2": CaseFigures(wrong_fields=("date",), extra_calls=1, output_tokens=200, busy_s=20.0),
    "c3": CaseFigures(wrong_fields=None, extra_calls=0, output_tokens=None, busy_s=None),  # unlabeled, failed
}
REFERENCE = {
    "c1": CaseFigures(wrong_fields=(), extra_calls=0, output_tokens=100, busy_s=20.0),
    "c2": CaseFigures(wrong_fields=(), extra_calls=0, output_tokens=100, busy_s=20.0),
    "c3": CaseFigures(wrong_fields=None, extra_calls=0, output_tokens=None, busy_s=None),
}


def test_each_ingredient_and_the_total_match_the_hand_computed_figures():
    costs = variant_costs(
        cases=VARIANT, prices=PRICES, memory_gib=2.0, reference_cases=REFERENCE, reference_memory_gib=4.0
    )
    by_name = {i.name: i for i in costs.ingredients}
    # review: c2 has a wrong field (4.0), c1 none, c3 is unlabeled: mean 2.0 per extraction
    assert by_name["review"].per_1000 == pytest.approx(2000.0)
    assert by_name["review"].cases == 2
    assert by_name["retries"].per_1000 == pytest.approx(1000 * 0.5 / 3)  # one extra call in 3 cases
    assert by_name["node"].per_1000 == pytest.approx(15.0)  # 3.6/h x 10 s and 20 s
    assert by_name["memory"].per_1000 == pytest.approx(3.0)  # 2 GiB x 0.36/GiB-h over the same time
    assert by_name["energy"].per_1000 == pytest.approx(300.0)  # 2.0 per 1,000 tokens x 150 tokens
    assert costs.total_per_1000 == pytest.approx(2000 + 1000 * 0.5 / 3 + 15 + 3 + 300)
    # against the reference, over the cases both measured
    assert by_name["review"].delta == pytest.approx(2000.0)
    assert by_name["node"].delta == pytest.approx(-5.0)  # (10 - 20 s and 20 - 20 s) x 3.6/h
    assert by_name["memory"].delta == pytest.approx(1000 * ((0.002 - 0.008) + (0.004 - 0.008)) / 2)
    # the total's cases: those with every counted ingredient (c1: 0.212 vs 0.228; c2: 4.924 vs 0.228)
    assert costs.total_delta == pytest.approx(1000 * ((0.212 - 0.228) + (4.924 - 0.228)) / 2)
    assert costs.total_interval is not None
    assert costs.total_delta is not None
    assert costs.total_interval.low <= costs.total_delta <= costs.total_interval.high


def test_the_paired_interval_of_an_ingredient_brackets_its_delta_and_is_zero_width_when_all_agree():
    same = variant_costs(cases=REFERENCE, prices=PRICES, memory_gib=4.0, reference_cases=REFERENCE,
                         reference_memory_gib=4.0)  # fmt: skip
    node = same.ingredient("node")
    assert node.delta == 0.0
    assert node.interval is not None
    assert (node.interval.low, node.interval.high) == (0.0, 0.0)
    spread = {
        f"c{i}": CaseFigures(wrong_fields=(), extra_calls=i % 3, output_tokens=10, busy_s=1.0)
        for i in range(40)
    }
    flat = {
        f"c{i}": CaseFigures(wrong_fields=(), extra_calls=0, output_tokens=10, busy_s=1.0) for i in range(40)
    }
    retries = variant_costs(cases=spread, prices=PRICES, memory_gib=1.0, reference_cases=flat,
                            reference_memory_gib=1.0).ingredient("retries")  # fmt: skip
    assert retries.delta == pytest.approx(1000 * 0.5 * (13 * 1 + 13 * 2) / 40)
    assert retries.interval is not None
    assert retries.delta is not None
    assert retries.interval.low < retries.delta < retries.interval.high
    assert retries.interval.low > 0  # every case costs at least as much: the interval stays above 0


def test_a_traffic_below_the_nodes_capacity_pays_for_its_idle_time():
    quiet = Prices(node_per_hour=3.6, extractions_per_hour=60.0)  # one a minute; a case holds 15 s
    node = variant_costs(cases=VARIANT, prices=quiet, memory_gib=None).ingredient("node")
    assert node.per_1000 == pytest.approx(3.6 * 1000 / 60)  # the node's hours over the traffic
    busy = Prices(node_per_hour=3.6, extractions_per_hour=10_000.0)  # beyond one node: paid by the hour held
    assert variant_costs(cases=VARIANT, prices=busy, memory_gib=None).ingredient(
        "node"
    ).per_1000 == pytest.approx(15.0)


def test_what_is_not_priced_is_not_counted_and_what_is_not_measured_is_none():
    costs = variant_costs(
        cases=VARIANT, prices=Prices(memory_per_gib_hour=0.36, retry_call=1.0), memory_gib=None
    )
    memory, review, retries = (
        costs.ingredient("memory"),
        costs.ingredient("review"),
        costs.ingredient("retries"),
    )
    assert memory.per_1000 is None
    assert memory.missing == "not measured: the model's resident memory"
    assert review.per_1000 is None
    assert review.missing == "not counted: no review_per_case or review_per_field"
    assert retries.per_1000 == pytest.approx(1000 / 3)
    assert costs.total_per_1000 is None  # a counted ingredient is missing: no total, not a smaller one
    assert costs.missing == "not measured: memory"
    assert variant_costs(cases=VARIANT, prices=Prices(), memory_gib=1.0).missing == "no price is given"


def test_review_per_field_prices_each_wrong_field():
    prices = Prices(review_per_field={"date": 3.0, "*": 1.0})
    cases = {
        "a": CaseFigures(wrong_fields=("date", "name"), extra_calls=0, output_tokens=1, busy_s=1.0),
        "b": CaseFigures(wrong_fields=("amount",), extra_calls=0, output_tokens=1, busy_s=1.0),
    }
    assert variant_costs(cases=cases, prices=prices, memory_gib=1.0).ingredient(
        "review"
    ).per_1000 == pytest.approx(1000 * ((3.0 + 1.0) + 1.0) / 2)


def _costs(total: float, review: float | None) -> VariantCosts:
    return VariantCosts(ingredients=(CostIngredient(name="review", per_1000=review),), total_per_1000=total)


def test_the_break_even_rate_is_where_the_totals_meet():
    # variant: 100 per 1,000, of which review 40 at 10% wrong cases (400 per 1,000 at 100%);
    # reference: 120. The other 60 leave 60 for reviews: 60 / 400 = 15% wrong cases.
    assert break_even_wrong_case_rate(
        variant=_costs(100, 40), reference=_costs(120, 0), wrong_case_rate=0.1
    ) == (pytest.approx(0.15))
    assert (
        break_even_wrong_case_rate(variant=_costs(100, 40), reference=_costs(50, 0), wrong_case_rate=0.1)
        == 0.0
    )
    assert (
        break_even_wrong_case_rate(variant=_costs(100, 40), reference=_costs(900, 0), wrong_case_rate=0.1)
        == 1.0
    )
    assert (
        break_even_wrong_case_rate(variant=_costs(100, None), reference=_costs(120, 0), wrong_case_rate=0.1)
        is None
    )
    assert (
        break_even_wrong_case_rate(variant=_costs(100, 40), reference=_costs(120, 0), wrong_case_rate=0.0)
        is None
    )


def test_a_load_tests_node_time_per_extraction_sets_the_mean_of_the_hours():
    node = Prices(node_per_hour=3.6)
    # the cases held the node 10 s and 20 s; the load level served one extraction per 30 s
    measured = variant_costs(cases=VARIANT, prices=node, memory_gib=None, busy_per_extraction_s=30.0)
    assert measured.ingredient("node").per_1000 == pytest.approx(30.0)
    quiet = Prices(node_per_hour=3.6, extractions_per_hour=60.0)  # still idle half of each minute
    idle = variant_costs(cases=VARIANT, prices=quiet, memory_gib=None, busy_per_extraction_s=30.0)
    assert idle.ingredient("node").per_1000 == pytest.approx(60.0)
