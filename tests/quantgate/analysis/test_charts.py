"""The report's charts carry their uncertainty: intervals, case counts, the same cases compared."""

import random

import pytest

from evaluators.betting import betting_interval
from quantgate.analysis._charts import accuracy_memory_chart, field_delta_heatmap, latency_chart
from quantgate.analysis._run_view import load_run_view
from quantgate.decide._recommendation import decide
from quantgate.inputs._gates import Gates
from quantgate.rundir._files import RECORDS_FILE
from quantgate.rundir._store import read_records
from tests.quantgate.run_factory import make_run

CASES = 40


def _scores(seed: int, right: float) -> list[dict[str, float]]:
    rng = random.Random(seed)
    return [{"a": float(rng.random() < right), "b": rng.choice([0.0, 0.5, 1.0])} for _ in range(CASES)]


def _keep_records(run_dir, kept: dict[str, int], *, reverse: bool = False):
    """Keep only the first `kept[variant]` cases (c0, c1, ...) of the named variants; `reverse`
    writes records.jsonl backwards, so that its order is not the run's case order."""
    records = [
        r
        for r in read_records(run_dir)
        if r.variant not in kept or int(r.case_id.removeprefix("c")) < kept[r.variant]
    ]
    if reverse:
        records.reverse()
    (run_dir / RECORDS_FILE).write_text("".join(r.model_dump_json() + "\n" for r in records))
    return run_dir


def _run(tmp_path, *, record_values=None):
    """R, Q and S on 40 cases with mixed field scores (S's like R's); callers drop cases."""
    variants = {"R": _scores(1, 0.9), "Q": _scores(2, 0.7), "S": _scores(1, 0.9)}
    footprints = {"R": 900.0, "Q": 300.0, "S": 500.0}
    return make_run(tmp_path / "run", variants, footprints=footprints, record_values=record_values)


def _case_accuracies(run_dir, variant):
    """The variant's case accuracies in case-id order c0, c1, ... (the run's order)."""
    records = sorted(
        (r for r in read_records(run_dir) if r.variant == variant), key=lambda r: int(r.case_id[1:])
    )
    return [sum(r.fields.values()) / len(r.fields) for r in records]


def test_error_bars_are_the_betting_interval_of_the_case_accuracies_in_case_order(tmp_path):
    run_dir = _keep_records(_run(tmp_path), {"Q": 25}, reverse=True)
    chart = accuracy_memory_chart(load_run_view(run_dir), out=tmp_path)
    for name, cases in (("R", CASES), ("Q", 25), ("S", CASES)):
        values = _case_accuracies(run_dir, name)
        expected = betting_interval(values, confidence=0.95, low=0.0, high=1.0)
        assert expected is not None
        assert chart.data.loc[name, "cases"] == cases
        assert chart.data.loc[name, "accuracy_low"] == pytest.approx(expected.low, abs=1e-12)
        assert chart.data.loc[name, "accuracy_high"] == pytest.approx(expected.high, abs=1e-12)
        assert expected.low <= chart.data["field_accuracy"].to_dict()[name] <= expected.high
    backwards = betting_interval(_case_accuracies(run_dir, "Q")[::-1], confidence=0.95, low=0.0, high=1.0)
    assert backwards is not None
    assert (backwards.low, backwards.high) != (
        chart.data.loc["Q", "accuracy_low"],
        chart.data.loc["Q", "accuracy_high"],
    )
    assert (
        "95% betting confidence interval of the mean case accuracy, valid at any number of cases"
        in chart.note
    )
    assert chart.data["on_frontier"].to_dict() == {"R": False, "Q": True, "S": True}


def test_error_bars_take_the_confidence_of_the_gates(tmp_path):
    run_dir = _run(tmp_path)
    decide(run_dir, Gates(confidence=0.8))
    chart = accuracy_memory_chart(load_run_view(run_dir), out=tmp_path)
    expected = betting_interval(_case_accuracies(run_dir, "Q"), confidence=0.8, low=0.0, high=1.0)
    wider = betting_interval(_case_accuracies(run_dir, "Q"), confidence=0.95, low=0.0, high=1.0)
    assert expected is not None
    assert wider is not None
    assert chart.data.loc["Q", "accuracy_low"] == pytest.approx(expected.low, abs=1e-12)
    assert chart.data.loc["Q", "accuracy_high"] == pytest.approx(expected.high, abs=1e-12)
    assert wider.high - wider.low > expected.high - expected.low
    assert "80% betting confidence interval" in chart.note


def test_heatmap_counts_the_paired_cases_and_greys_cells_under_the_minimum(tmp_path):
    run_dir = _keep_records(_run(tmp_path), {"S": 12})
    chart = field_delta_heatmap(load_run_view(run_dir), out=tmp_path)
    assert chart.data.loc["a", "Q cases"] == CASES
    assert chart.data.loc["b", "S cases"] == 12
    assert chart.data.loc["a", "S"] == pytest.approx(0.0)  # S answers as R: the value is still given
    assert "Grey cells (value still written): fewer than 20 paired cases" in chart.note
    assert "S (every field; 12 paired cases)" in chart.note
    assert "Q (" not in chart.note  # 40 paired cases: drawn in colour


def test_heatmap_minimum_is_the_gates_min_slice_cases(tmp_path):
    run_dir = _keep_records(_run(tmp_path), {"S": 12})
    decide(run_dir, Gates(min_slice_cases=10))
    chart = field_delta_heatmap(load_run_view(run_dir), out=tmp_path)
    assert chart.data.loc["a", "S cases"] == 12
    assert "Grey cells" not in chart.note
    assert "Every cell rests on at least 10 paired cases." in chart.note


def test_latency_is_drawn_on_the_cases_every_variant_ran(tmp_path):
    values = {"R": {"ttft_s": 0.5}, "Q": {"ttft_s": 0.2}}  # S does not measure its first token
    run_dir = _keep_records(_run(tmp_path, record_values=values), {"Q": 25, "S": 30})
    chart = latency_chart(load_run_view(run_dir), out=tmp_path)
    common = {f"c{i}" for i in range(25)}
    totals = chart.data.dropna(subset=["total_s"])
    for name in ("R", "Q", "S"):
        assert set(totals.loc[totals["variant"] == name, "case_id"]) == common
    ttfts = chart.data.dropna(subset=["ttft_s"])
    assert set(ttfts["variant"]) == {"R", "Q"}
    assert set(ttfts["case_id"]) == common
    assert set(chart.data["case_id"]) == common
    expected = {r.case_id: r.total_s for r in read_records(run_dir) if r.variant == "R"}
    measured = totals.loc[totals["variant"] == "R"].set_index("case_id")["total_s"]
    assert measured.to_dict() == {case_id: expected[case_id] for case_id in measured.index}
    assert "on the 25 cases every variant ran (cases measured: R 40, Q 25, S 30" in chart.note
    assert "Left out of time to first token (not measured): S." in chart.note


def test_latency_without_a_common_case_says_so(tmp_path):
    run_dir = _run(tmp_path)
    records = [
        r
        for r in read_records(run_dir)
        if (r.variant == "Q" and r.case_id in {"c0", "c1"}) or (r.variant != "Q" and r.case_id == "c2")
    ]
    (run_dir / RECORDS_FILE).write_text("".join(r.model_dump_json() + "\n" for r in records))
    chart = latency_chart(load_run_view(run_dir), out=tmp_path)
    assert chart.data.empty
    assert "no case was measured for every variant (R 1, Q 2, S 1): nothing drawn" in chart.note
