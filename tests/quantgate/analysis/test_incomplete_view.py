"""The explore view and the report of a run directory that does not hold the whole run: what it
holds, with its problems, and never a crash."""

from __future__ import annotations

from pathlib import Path

from quantgate.analysis._charts import draw_charts
from quantgate.analysis._report import render_report
from quantgate.analysis._run_view import (
    failing_cases,
    field_accuracy,
    latencies,
    load_run_view,
    variant_table,
)
from tests.quantgate.rundir.incomplete_runs import INTERRUPTED, complete_run, damage_line, rewrite


def _empty_interrupted(directory: Path) -> Path:
    every = {(v, f"c{i}") for v in ("R", "Q") for i in range(3)}
    return rewrite(complete_run(directory), status="interrupted", listed=(), drop=every)


def test_the_view_of_a_run_without_records_or_variants(tmp_path: Path) -> None:
    view = load_run_view(_empty_interrupted(tmp_path / "run"))
    assert view.completeness.problems == (INTERRUPTED,)
    assert (view.variants, dict(view.records)) == ((), {})
    table = variant_table(view)
    assert table.empty
    assert table.index.name == "variant"
    assert {"cases", "field_accuracy", "footprint_mb", "verdict"} <= set(table.columns)
    assert failing_cases(view).empty
    assert field_accuracy(view).empty
    assert latencies(view).empty


def test_the_report_of_a_run_without_records_shows_the_notice(tmp_path: Path) -> None:
    view = load_run_view(_empty_interrupted(tmp_path / "run"))
    charts = draw_charts(view, out=tmp_path / "charts")
    page = render_report(view, charts=charts)
    assert "<strong>Incomplete run.</strong>" in page
    assert "<li>summary.json says the run was &#34;interrupted&#34; before it finished</li>" in page


def test_a_corrupt_line_is_left_out_of_the_view_and_named(tmp_path: Path) -> None:
    run_dir = damage_line(complete_run(tmp_path / "run"), 4, "<html>")  # Q's c0
    view = load_run_view(run_dir)
    assert sorted(view.records["Q"]) == ["c1", "c2"]
    assert view.completeness.problems == (
        "records.jsonl line 4: not JSON (Expecting value: line 1 column 1 (char 0))",
        "variant Q: records.jsonl holds 2 of the 3 cases summary.json counts for it",
    )
    assert variant_table(view).loc["Q", "cases"] == 2
    page = render_report(view, charts=[])
    assert "<li>records.jsonl line 4: not JSON (Expecting value: line 1 column 1 (char 0))</li>" in page
