"""Latency against the reference as the terminal summary, decision.md and the report show it: each
candidate's median paired difference with its interval, and p95 labelled descriptive."""

from __future__ import annotations

from pathlib import Path

from evaluators.paired_latency import LatencyAgainstReference, PairedMedian
from quantgate.analysis._report import render_report
from quantgate.analysis._run_view import load_run_view
from quantgate.decide._recommendation import decide
from quantgate.render._latency_pairs import latency_pairs
from quantgate.render._summary_table import render_summary
from quantgate.rundir._files import DECISION_MD, SUMMARY_FILE
from quantgate.rundir._round_loads import RoundLoadEntry
from quantgate.rundir._store import read_summary, write_model
from quantgate.rundir._summary import DatasetInfo, RunSummary, VariantEntry
from tests.quantgate.run_factory import make_run

SLOWER = LatencyAgainstReference(
    pairs=12,
    confidence=0.95,
    total_s=PairedMedian(pairs=12, median=0.65, low=0.3, high=1.0, coverage=0.961),
    ttft_s=PairedMedian(pairs=12, median=0.012, low=-0.004, high=0.03, coverage=0.961),
    generation_tokens_per_s=PairedMedian(pairs=12, median=-2.5, low=-3.1, high=-1.9, coverage=0.961),
)
FEW = LatencyAgainstReference(
    pairs=3,
    confidence=0.95,
    total_s=PairedMedian(pairs=3, median=-0.2),
    ttft_s=PairedMedian(pairs=0),
    generation_tokens_per_s=PairedMedian(pairs=3, median=1.0),
)


def _entries() -> list[VariantEntry]:
    return [
        VariantEntry(name="R", backend="test", is_reference=True, latency_s_p95=4.2),
        VariantEntry(name="Q4", backend="test", latency_s_p95=5.0, latency_against_reference=SLOWER),
        VariantEntry(name="Q2", backend="test", latency_against_reference=FEW),
        VariantEntry(name="gone", backend="test", status="skipped", error="no file"),
    ]


def _summary(entries: list[VariantEntry]) -> RunSummary:
    dataset = DatasetInfo(name="d", path="d", sha256="0", cases=12)
    return RunSummary(
        run_id="r", quantgate_version=None, status="complete", dataset=dataset, variants=entries
    )


def test_each_candidate_shows_its_median_difference_with_the_interval():
    table = latency_pairs(_summary(_entries()))
    assert table is not None
    assert table.header[-1] == "p95 (s, descriptive)"
    assert table.rows == [
        ["R *", "—", "—", "—", "—", "4.20"],
        ["Q4", "12", "+0.65 [+0.30, +1.00]", "+0.012 [-0.004, +0.030]", "-2.5 [-3.1, -1.9]", "5.00"],
        ["Q2", "3", "-0.20 [—]", "—", "+1.0 [—]", "—"],  # too few pairs: no bounds, not 0
    ]
    assert "95% sign-test interval" in table.note


def test_a_run_without_paired_latency_has_no_table():
    entries = [VariantEntry(name="R", backend="test", is_reference=True, latency_s_p95=4.2)]
    assert latency_pairs(_summary(entries)) is None
    assert "latency against the reference" not in render_summary(_summary(entries))


def test_the_printed_summary_shows_the_table():
    text = render_summary(_summary(_entries()))
    assert "latency against the reference:" in text
    assert "+0.65 [+0.30, +1.00]" in text


def test_decision_md_and_the_report_show_the_table(tmp_path: Path):
    scores = [{"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 1.0}]
    run_dir = make_run(tmp_path / "run", {"R": scores, "Q4": scores}, footprints={"R": 1.0, "Q4": 1.0})
    summary = read_summary(run_dir)
    entry = summary.entry("Q4")
    assert entry is not None
    entry.latency_against_reference = SLOWER
    write_model(run_dir / SUMMARY_FILE, summary)
    decide(run_dir)
    decision = (run_dir / DECISION_MD).read_text()
    assert "## Latency" in decision
    assert "| Q4 | 12 | +0.65 \\[+0.30, +1.00\\] |" in decision
    page = render_report(load_run_view(run_dir), charts=[])
    assert '<h3 id="latency">Latency against the reference</h3>' in page
    assert '<td class="num">+0.65 [+0.30, +1.00]</td>' in page


def _load(variant: str, *, busy: bool) -> RoundLoadEntry:
    return RoundLoadEntry(
        round=1, variant=variant, cases=12, wall_s=30.0, others_cpu_share=0.4 if busy else 0.01,
        steal_share=0.0, load_1min=3.9 if busy else 0.5, busy=busy,
    )  # fmt: skip


def test_a_pair_taken_while_the_machine_was_busy_says_so():
    """A candidate's own busy rounds mark its row; a busy reference marks every pair."""
    summary = _summary(_entries())
    summary.machine_load = [_load("R", busy=False), _load("Q4", busy=True), _load("Q2", busy=False)]
    table = latency_pairs(summary)
    assert table is not None
    assert [row[0] for row in table.rows] == ["R *", "Q4 ~", "Q2"]
    assert "~: the variant's or the reference's timings partly taken while the machine was busy" in table.note
    summary.machine_load = [_load("R", busy=True)]
    table = latency_pairs(summary)
    assert table is not None
    assert [row[0] for row in table.rows] == ["R * ~", "Q4 ~", "Q2 ~"]
