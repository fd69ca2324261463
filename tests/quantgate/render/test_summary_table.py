"""The summary table: the trivial baseline beside accuracy, and the flag of a variant not above it."""

from pathlib import Path

from quantgate.analysis._report import render_report
from quantgate.analysis._run_view import load_run_view
from quantgate.render._summary_table import BASELINE_NOTE, below_baseline, render_summary, summary_rows
from quantgate.rundir._files import SUMMARY_FILE
from quantgate.rundir._store import read_summary, write_model
from quantgate.rundir._summary import DatasetInfo, RunSummary, VariantEntry
from tests.quantgate.run_factory import make_run

# accuracy above, at and below the baseline; a baseline not computed; a skipped variant
FIGURES = {"R": (0.5, 0.4), "Q8": (0.4, 0.4), "Q4": (0.3, 0.4), "Q2": (0.3, None)}


def _summary() -> RunSummary:
    variants = [
        VariantEntry(
            name=name, backend="test", is_reference=name == "R", field_accuracy=acc, baseline_accuracy=base
        )
        for name, (acc, base) in FIGURES.items()
    ]
    variants.append(VariantEntry(name="gone", backend="test", status="skipped", error="no file"))
    return RunSummary(
        run_id="r1",
        quantgate_version="test",
        status="complete",
        dataset=DatasetInfo(name="synthetic", path="x", sha256="x", cases=4),
        variants=variants,
    )


def test_baseline_column_follows_accuracy_and_flags_a_variant_not_above_it():
    header, *rows = summary_rows(_summary())
    assert header[4:7] == ["accuracy", "baseline", "Δ vs ref"]
    cells = {row[0]: row[4:6] for row in rows}
    assert cells == {
        "R *": ["50.0%", "40.0%"],
        "Q8": ["40.0%!", "40.0%"],  # equal is not above
        "Q4": ["30.0%!", "40.0%"],
        "Q2": ["30.0%", "—"],  # no baseline, no flag
        "gone": ["", ""],
    }
    assert [below_baseline(e) for e in _summary().variants] == [False, True, True, False, False]


def test_rendered_table_explains_the_flag_only_when_a_variant_carries_it():
    text = render_summary(_summary())
    assert text.splitlines()[-1] == BASELINE_NOTE
    lines = {line.split()[0]: line for line in text.splitlines()[2:6]}
    assert "  30.0%!     40.0%  " in lines["Q4"]
    assert "  50.0%      40.0%  " in lines["R"]  # unmarked digits stay aligned with the marked ones
    assert BASELINE_NOTE == "! not above the trivial baseline (always null or majority value)"
    above_only = _summary()
    above_only.variants = above_only.variants[:1]
    text = render_summary(above_only)
    assert "!" not in text
    assert text.splitlines()[-1].startswith("* reference")


def test_report_flags_the_rows_not_above_the_baseline(tmp_path: Path):
    scores = [{"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 1.0}]
    run_dir = make_run(
        tmp_path / "run",
        {"R": scores, "Q8": scores, "Q4": scores},
        footprints=dict.fromkeys(("R", "Q8", "Q4"), 1.0),
    )
    summary = read_summary(run_dir)
    for entry, (accuracy, baseline) in zip(summary.variants, FIGURES.values(), strict=False):
        entry.field_accuracy, entry.baseline_accuracy = accuracy, baseline
    write_model(run_dir / SUMMARY_FILE, summary)
    page = render_report(load_run_view(run_dir), charts=[])
    assert page.count('<tr class="below-baseline">') == 2
    assert '<tr class="below-baseline"><td>Q8</td>' in page
    assert '<tr class="below-baseline"><td>Q4</td>' in page
    assert '<td class="num accuracy">40.0%!</td>' in page
    assert '<td class="num accuracy">30.0%!</td>' in page
    assert "<tr><td>R *</td>" in page
    assert '<td class="num">50.0%</td><td class="num">40.0%</td>' in page  # R: above, shown plainly
    assert f'<p class="fail">{BASELINE_NOTE}</p>' in page
    assert "<th>baseline</th>" in page


def test_report_without_baselines_has_no_flag(tmp_path: Path):
    scores = [{"a": 1.0, "b": 0.0}]
    run_dir = make_run(tmp_path / "run", {"R": scores, "Q": scores}, footprints={"R": 1.0, "Q": 1.0})
    page = render_report(load_run_view(run_dir), charts=[])
    assert "below-baseline" not in page.split("</style>")[1]
    assert BASELINE_NOTE not in page
