"""The suite's grid: each cell names the gate that made its verdict; suite_decision.md's task sections
show each variant's token fidelity tail."""

from __future__ import annotations

from pathlib import Path

from evaluators.fidelity import TokenFidelity
from quantgate.decide._recommendation import decide
from quantgate.rundir._store import read_summary
from quantgate.suite._suite_grid import TaskDecided, grid_rows, render_suite_markdown, suite_decision_line
from quantgate.suite._suite_records import SuiteDecision, SuiteVariantDecision, TaskVerdict
from tests.quantgate.run_factory import TAIL_CASE_A, TAIL_CASE_B, make_run, with_token_fidelity


def _decision() -> SuiteDecision:
    passed = TaskVerdict(verdict="pass", passes=True)
    q2 = {
        "intents": TaskVerdict(
            verdict="fail",
            passes=False,
            failed_gates=["max_accuracy_drop inconclusive", "max_error_rate fail"],  # the order decide gives
        ),
        "texts": TaskVerdict(
            verdict="inconclusive", passes=False, failed_gates=["max_accuracy_drop inconclusive"]
        ),
        "calls": TaskVerdict(verdict="not_run", passes=False),
    }
    return SuiteDecision(
        recommended="F16",
        outcome="keep_reference",
        exit_status=4,
        reference="F16",
        tasks=["intents", "texts", "calls"],
        variants={
            "F16": SuiteVariantDecision(
                passes=True,
                is_reference=True,
                footprint_mb=700.0,
                failing_tasks=[],
                tasks=dict.fromkeys(("intents", "texts", "calls"), passed),
            ),
            "Q2_K": SuiteVariantDecision(
                passes=False,
                is_reference=False,
                footprint_mb=400.0,
                failing_tasks=["intents", "texts", "calls"],
                tasks=q2,
            ),
        },
        decided_at="2026-12-04T07:00:00+00:00",
    )


def test_each_cell_names_the_gate_that_made_its_verdict():
    assert grid_rows(_decision()) == [
        ["task", "F16", "Q2_K"],
        ["intents", "pass", "fail: max_error_rate +1"],  # the failing gate, not the inconclusive one first
        ["texts", "pass", "inconclusive: max_accuracy_drop"],
        ["calls", "pass", "not run"],
        ["every task", "pass", "not all"],
    ]


def test_the_decision_line_names_the_tasks_each_variant_does_not_pass():
    assert suite_decision_line(_decision()) == (
        "keep the reference F16: no quantized variant passes every task "
        "(Q2_K does not pass intents, texts, calls)"
    )


def _task(
    directory: Path, fidelity: dict[str, list[TokenFidelity]], *, older_format: bool = False
) -> TaskDecided:
    scores = [{"a": 1.0}] * 4
    variants = {"F16": scores, "Q2_K": scores}
    run_dir = make_run(directory, variants, footprints={"F16": 2, "Q2_K": 1}, reference="F16")
    with_token_fidelity(run_dir, fidelity, older_format=older_format)
    return TaskDecided(kind="extraction", decision=decide(run_dir), summary=read_summary(run_dir))


def test_suite_decision_md_shows_each_tasks_token_fidelity_tail(tmp_path: Path):
    tasks = {
        "intents": _task(tmp_path / "intents", {"Q2_K": [TAIL_CASE_A]}),
        "texts": _task(tmp_path / "texts", {"Q2_K": [TAIL_CASE_B]}, older_format=True),
        "calls": _task(tmp_path / "calls", {}),
    }
    markdown = render_suite_markdown(_decision(), tasks)
    sections = markdown.split("## Task ")[1:]
    header = "| variant | KLD mean | KLD p99 | largest drop | top-1 structural | top-1 value |"
    assert "### Token fidelity" in sections[0]
    assert header in sections[0]
    assert "| F16 (reference) | — | — | — | — | — |" in sections[0]
    assert "| Q2\\_K | 0.1125 | 0.3889 | -30.0 | 66.7% | 100.0% |" in sections[0]
    # a run written before the tail: its KLD mean and p99 only
    assert "| Q2\\_K | 0.0500 | 0.0990 | — | — | — |" in sections[1]
    assert "Token fidelity" not in sections[2]  # no variant of calls has token fidelity
