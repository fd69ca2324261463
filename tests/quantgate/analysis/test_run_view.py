import pytest

from quantgate.analysis._case_diff import case_diff
from quantgate.analysis._run_view import (
    failing_cases,
    field_accuracy,
    field_deltas,
    field_scores,
    latencies,
    latest_run,
    load_run_view,
    only_variant_fails,
    pareto_frontier,
    slice_accuracy,
    slice_sizes,
    variant_table,
)
from quantgate.decide._recommendation import decide
from quantgate.rundir._store import read_records
from tests.fakes import GOOD
from tests.quantgate.run_factory import HOSTILE_GOLD, HOSTILE_OUTPUT, make_fake_run, make_run


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    return make_fake_run(tmp_path_factory.mktemp("fake"))


def hand_run(tmp_path):
    """R right on every field; Q misses `b` on c1 and c2 and `a` on c3; c3 is also wrong for R on `b`."""
    r = [{"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 0.0}]
    q = [{"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 0.0}, {"a": 1.0, "b": 0.5}, {"a": 0.0, "b": 0.0}]
    tags = [("lang:en", "numbers"), ("lang:es", "numbers"), ("lang:es", "dates"), ("lang:en",)]
    return make_run(tmp_path / "run", {"R": r, "Q": q}, footprints={"R": 700.0, "Q": 400.0}, tags=tags)


def test_pareto_frontier_on_a_hand_made_example():
    memory = {"A": 100.0, "B": 200.0, "C": 300.0, "D": 50.0, "E": None, "F": 200.0, "G": 120.0}
    accuracy = {"A": 0.5, "B": 0.7, "C": 0.6, "D": 0.4, "E": 0.99, "F": 0.7, "G": None}
    # C is beaten by B (less memory, more accuracy); E and G were not measured; B and F tie.
    assert pareto_frontier(memory=memory, accuracy=accuracy) == ["D", "A", "B", "F"]
    assert pareto_frontier(memory={"X": 10.0}, accuracy={"X": 0.1}) == ["X"]
    assert pareto_frontier(memory={}, accuracy={}) == []


def test_field_deltas_equal_the_deltas_computed_from_records(tmp_path):
    run_dir = hand_run(tmp_path)
    by_variant: dict[str, list[dict[str, float]]] = {"R": [], "Q": []}
    for record in read_records(run_dir):
        by_variant[record.variant].append(record.fields)
    deltas = field_deltas(load_run_view(run_dir))
    assert list(deltas.columns) == ["Q"]
    for field in ("a", "b"):
        expected = sum(q[field] - r[field] for r, q in zip(by_variant["R"], by_variant["Q"], strict=True)) / 4
        assert deltas.loc[field, "Q"] == pytest.approx(expected)
    assert deltas.loc["b", "Q"] == pytest.approx((0 - 1 + -0.5 + 0) / 4)


def test_field_and_slice_accuracy_pool_the_field_scores(tmp_path):
    view = load_run_view(hand_run(tmp_path))
    assert field_accuracy(view).loc["b", "Q"] == pytest.approx(1.5 / 4)
    slices = slice_accuracy(view)
    assert list(slices.index) == ["dates", "lang:en", "lang:es", "numbers"]
    assert slices.loc["lang:es", "Q"] == pytest.approx((1 + 0 + 1 + 0.5) / 4)  # c1 and c2, both fields
    assert slices.loc["lang:en", "R"] == pytest.approx(3 / 4)
    assert slice_sizes(view).to_dict() == {"dates": 1, "lang:en": 2, "lang:es": 2, "numbers": 2}


def test_frames_match_the_summary_the_run_wrote(fake_run):
    """The view recomputes from records what `quantgate run` aggregated with evaluators.aggregate."""
    view = load_run_view(fake_run)
    for entry in view.run.summary.variants:
        name = entry.name
        assert field_accuracy(view)[name].to_dict() == pytest.approx(entry.fields)
        assert slice_accuracy(view)[name].to_dict() == pytest.approx(entry.slices)
        assert variant_table(view).loc[name, "field_accuracy"] == pytest.approx(entry.field_accuracy)
    assert variant_table(view).loc["quant", "accuracy_delta"] == pytest.approx(
        view.run.summary.variants[1].field_accuracy_delta
    )


def test_only_variant_fails_lists_the_fields_the_reference_got_right(tmp_path):
    lost = only_variant_fails(load_run_view(hand_run(tmp_path)))
    # c3's b is wrong for both: not a regression; c3's a is.
    assert sorted(zip(lost["case_id"], lost["field"], strict=True)) == [("c1", "b"), ("c2", "b"), ("c3", "a")]
    assert set(lost["variant"]) == {"Q"}
    assert lost.set_index("case_id").loc["c2", "variant_score"] == 0.5


def test_case_diff_puts_gold_reference_and_variant_side_by_side(fake_run):
    view = load_run_view(fake_run)
    diff = case_diff(view, case_id="c1", variant="quant")
    assert list(diff.index) == ["vendor", "total", "issued", "currency"]
    vendor = diff.loc["vendor"]
    assert (vendor["gold"], vendor["reference"], vendor["variant"]) == ("Acme", "Acme", HOSTILE_OUTPUT)
    assert (vendor["wrong"], vendor["differs"]) == (True, True)
    assert (vendor["variant_score"], vendor["reference_score"]) == (0.0, 1.0)
    total = diff.loc["total"]
    assert total["gold"] == total["variant"] == GOOD["total"]
    assert (total["wrong"], total["differs"]) == (False, False)
    assert case_diff(view, case_id="c0", variant="ref").loc["vendor", "gold"] == HOSTILE_GOLD


def test_case_diff_keeps_a_null_value_as_none(tmp_path):
    """A predicted null is a value (`null`), not a missing figure: it must not become NaN."""
    run_dir = make_run(tmp_path / "run", {"R": [{"a": 1.0, "b": 1.0}], "Q": [{"a": 0.0, "b": 1.0}]},
                       footprints={"R": 2.0, "Q": 1.0})  # fmt: skip
    records = [
        r.model_copy(update={"record": {"a": None if r.variant == "Q" else "x", "b": 0.0}})
        for r in read_records(run_dir)
    ]
    (run_dir / "records.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    diff = case_diff(load_run_view(run_dir), case_id="c0", variant="Q")
    assert diff.loc["a", "variant"] is None
    assert diff.loc["a", "reference"] == "x"
    assert diff.loc["a", "differs"]


def test_case_diff_of_an_output_that_never_parsed(fake_run):
    diff = case_diff(load_run_view(fake_run), case_id="c3", variant="quant")
    assert not diff["variant_answered"].any()
    assert diff["reference_answered"].all()
    assert diff["variant"].isna().all()
    assert set(diff["outcome"]) == {"no_output"}
    assert diff.loc["vendor", "gold"] == GOOD["vendor"]


def test_failing_cases_include_errors_and_wrong_fields(fake_run):
    failing = failing_cases(load_run_view(fake_run)).set_index(["variant", "case_id"])
    assert set(failing.index) == {("ref", "c0"), ("ref", "c4"), ("quant", "c0"), ("quant", "c1"),
                                  ("quant", "c3"), ("quant", "c4")}  # fmt: skip
    assert failing.loc[("quant", "c3"), "error_kind"] == "invalid_output"
    assert failing.loc[("ref", "c4"), "fields"] == ("total",)


def test_a_figure_not_measured_is_nan_not_zero(tmp_path):
    view = load_run_view(hand_run(tmp_path))  # hand-written records have no time to first token
    assert latencies(view)["ttft_s"].isna().all()
    table = variant_table(view)
    assert table["ttft_s_p50"].isna().all()
    assert table["accuracy_delta"].isna()["R"]  # the reference has no delta
    assert table["accuracy_delta"]["Q"] == pytest.approx((4.5 - 7) / 8)  # 8 field scores each
    scores = field_scores(view)
    assert scores["agreement"].isna().sum() == 8  # the reference's own agreement is not measured


def test_view_reads_the_decision_once_there_is_one(tmp_path):
    run_dir = hand_run(tmp_path)
    assert load_run_view(run_dir).decision is None
    assert variant_table(load_run_view(run_dir))["passes"].isna().all()
    decide(run_dir)
    view = load_run_view(run_dir)
    assert view.decision is not None
    assert view.decision.reference == "R"
    assert variant_table(view).loc["R", "passes"]


def test_latest_run_is_the_newest_run_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="no run under"):
        latest_run(root=tmp_path / "runs")
    for run_id in ("20260101-000000-aaaaaa", "20260301-000000-bbbbbb", "20260201-000000-cccccc"):
        (tmp_path / "runs" / run_id).mkdir(parents=True)
        (tmp_path / "runs" / run_id / "summary.json").write_text("{}")
    (tmp_path / "runs" / "20270101-not-a-run").mkdir()
    assert latest_run(root=tmp_path / "runs").name == "20260301-000000-bbbbbb"
