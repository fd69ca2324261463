"""The suite's grid: each cell names the gate that made its verdict."""

from __future__ import annotations

from quantgate.render.suite_grid import grid_rows, suite_decision_line
from quantgate.rundir.suite_files import SuiteDecision, SuiteVariantDecision, TaskVerdict


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
