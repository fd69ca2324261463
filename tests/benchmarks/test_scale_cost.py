"""benchmarks/scale_cost.py without a model: the rounds' arithmetic on a small decision worked by hand,
and docs/scale.md's tables as the script prints them from the measured figures."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks import ROOT, load_benchmark

scale = load_benchmark("scale_cost")

# Seconds a case: the reference decodes in 10; A decodes in 4 and verifies in 1; B in 6 and 2.
COSTS = {
    "BF16": scale.CaseCosts(decoded=10.0, verified=99.0),
    "A": scale.CaseCosts(decoded=4.0, verified=1.0),
    "B": scale.CaseCosts(decoded=6.0, verified=2.0),
}
PAIRED = {"A": 24, "B": 12}  # two rounds of 12: B leaves after the first (the latency sample)


def _layout(**kwargs: object) -> object:
    return scale.Layout(name="test", machine=scale.CPU, **{"machines": 4, **kwargs})


def test_each_round_holds_the_reference_s_work_and_each_open_candidate_s() -> None:
    work = scale.rounds(COSTS, PAIRED, verify=True)

    # round 1 decoded in full by all: 12 x 10, 12 x 4, 12 x 6; round 2: the reference, and A verifying 12 x 1
    assert work == [(120.0, [48.0, 72.0]), (120.0, [12.0])]
    assert scale.rounds(COSTS, PAIRED, verify=False)[1] == (120.0, [48.0])


def test_a_partial_last_round_counts_only_its_cases() -> None:
    work = scale.rounds(COSTS, {"A": 18}, verify=True)

    assert work == [(120.0, [48.0]), (60.0, [6.0])]


@pytest.mark.parametrize(
    ("layout", "verify", "wall"),
    [
        ({"machines": 1, "shared": True}, True, 120 + 48 + 72 + 120 + 12),  # in turn
        ({}, True, 120 + 72 + 120 + 12),  # the reference first, then the slowest candidate
        ({}, False, 120 + 120),  # all at once: the reference is the slowest in both rounds
        ({"ahead": True}, True, 120 + max(120, 72) + 12),  # the reference's next round beside this one
        ({"machines": 8, "actors": 2}, True, (120 + 72 + 120 + 12) / 2),  # half the cases each
    ],
)
def test_the_wall_time_of_each_layout_worked_by_hand(
    layout: dict[str, object], verify: bool, wall: float
) -> None:
    result = scale.decision(COSTS, PAIRED, layout=_layout(**layout), verify=verify)

    assert result.wall_s == pytest.approx(wall)
    assert result.busy_s == pytest.approx(120 + 48 + 72 + 120 + (12 if verify else 48))
    assert result.held_s == pytest.approx(result.machines * wall)


def test_another_dataset_scales_the_measured_tokens_by_its_own_against_restaurants() -> None:
    measured = {"Q8_0": {"t_read": 0.1, "t_decode": 0.2, "read": 30.0, "written": 60.0, "tail": 6.0}}
    restaurants = {"read_tokens": 31.0, "gold_tokens": 59.0}
    longer = {"read_tokens": 310.0, "gold_tokens": 118.0}  # 10 times the prompt, twice the answer

    costs = scale.with_tokens(measured, longer, restaurants)

    assert costs["Q8_0"] == pytest.approx(
        {"t_read": 0.1, "t_decode": 0.2, "read": 300.0, "written": 120.0, "tail": 12.0}
    )
    assert scale.with_tokens(measured, restaurants, restaurants) == measured


def test_docs_scale_md_holds_the_script_s_tables() -> None:
    figures, tokens = (json.loads(path.read_text()) for path in (scale.MEASURED, scale.TOKENS))

    tables = scale.report(figures, tokens).split("\n\n")

    page = (ROOT / "docs" / "scale.md").read_text()
    assert [table in page for table in tables] == [True] * len(tables)
    assert len(tables) == 5
    assert "| 1 CPU machine |" in tables[2]
    assert "| long-documents |" in tables[4]
