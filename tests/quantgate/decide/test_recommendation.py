"""The decision: gate logic on synthetic figures, and decide() on synthetic run directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluators.comparison import PairedDelta, summarize_agreement
from evaluators.statistics import Interval
from quantgate.decide._checks import GateEvidence, Measured, judge_drop, judge_variant, passes
from quantgate.decide._recommendation import DecisionError, decide, recommend
from quantgate.decide._rollback import rollback_signals
from quantgate.inputs._dataset import check_dataset
from quantgate.inputs._gates import Gates
from tests.quantgate.run_factory import make_run

RIGHT = {"a": 1.0, "b": 1.0}
HALF = {"a": 1.0, "b": 0.0}


def _delta(delta: float | None, low: float, high: float, cases: int = 30) -> PairedDelta:
    interval = Interval(low=low, high=high, confidence=0.95, method="test") if delta is not None else None
    return PairedDelta(
        cases=cases,
        reference=0.8,
        variant=None if delta is None else 0.8 + delta,
        delta=delta,
        interval=interval,
        reference_only=0,
        variant_only=0,
        mcnemar_p=1.0,
        verdict="inconclusive",
        reason="",
    )


@pytest.mark.parametrize(
    ("delta", "low", "high", "cases", "status"),
    [
        (-0.01, -0.03, 0.01, 30, "pass"),
        (-0.08, -0.12, -0.06, 30, "fail"),
        (-0.02, -0.07, 0.02, 30, "inconclusive"),  # the drop may exceed 5 points
        (0.0, 0.0, 0.0, 4, "inconclusive"),  # too few cases, however tight
        (None, 0.0, 0.0, 0, "not_measured"),
    ],
)
def test_accuracy_drop_gate(delta: float | None, low: float, high: float, cases: int, status: str) -> None:
    result = judge_drop("max_accuracy_drop", _delta(delta, low, high, cases), max_drop=0.05, min_cases=10)
    assert result.status == status
    assert result.threshold == -0.05


def _measured(**changes: object) -> Measured:
    values: dict[str, object] = {
        "cases": 40,
        "format_valid": 40,
        "errors": 0,
        "latency_s_p95": 2.0,
        "memory_mb": 800.0,
        "memory_source": "memory_mb",
        "footprint_mb": 450.0,
        "footprint_source": "model_memory_mb",
    }
    values.update(changes)
    return Measured(**values)  # type: ignore[arg-type]


def test_absolute_gates_pass_and_fail_on_the_measured_value() -> None:
    gates = Gates(max_memory_mb=1000, max_p95_latency_s=1.5, min_format_validity=0.95, max_error_rate=0.05)
    results = {
        r.gate: r.status
        for r in judge_variant(
            GateEvidence(
                measured=_measured(format_valid=37, errors=3), comparison=None, gates=gates, is_reference=True
            )
        )
    }
    assert results == {
        "max_accuracy_drop": "pass",  # the reference itself
        "max_flip_share": "pass",  # the reference itself
        "min_format_validity": "fail",  # 37/40 = 92.5% < 95%
        "max_error_rate": "fail",  # 3/40 = 7.5% > 5%
        "max_memory_mb": "pass",
        "max_p95_latency_s": "fail",
    }


def test_an_unmeasured_figure_never_passes() -> None:
    results = judge_variant(
        GateEvidence(
            measured=_measured(memory_mb=None),
            comparison=None,
            gates=Gates(max_memory_mb=1000),
            is_reference=False,
        )
    )
    statuses = {r.gate: r.status for r in results}
    assert statuses["max_memory_mb"] == "not_measured"
    assert statuses["max_accuracy_drop"] == "not_measured"
    assert not passes(results)


def test_recommend_takes_the_smallest_passing_footprint() -> None:
    assert recommend([("F16", True, 716.0), ("Q8_0", True, 476.0), ("Q4_K_M", False, 440.0)]) == "Q8_0"
    assert recommend([("A", True, None), ("B", True, 900.0)]) == "B"  # unmeasured ranks last
    assert recommend([("A", False, 1.0)]) is None


def test_rollback_thresholds_follow_from_the_measurements() -> None:
    signals = {s.metric: s for s in rollback_signals(measured=_measured(), agreement=None, gates=Gates())}
    validity = signals["format_validity"]
    assert validity.direction == "below"
    assert 0.9 <= validity.threshold < 1.0  # Wilson lower bound of 40/40 is 0.912, above the 0.90 gate
    assert validity.threshold == pytest.approx(0.9124, abs=1e-3)
    assert signals["error_rate"].threshold == 0.05  # capped by the gate (Wilson upper bound is 0.088)
    assert signals["latency_s_p95"].threshold == pytest.approx(3.0)
    assert signals["memory_mb"].threshold == pytest.approx(960.0)


def test_agreement_signals_do_not_collapse_to_the_measured_value() -> None:
    agreement = summarize_agreement([{"a": 1.0, "b": 1.0}] * 40)
    found = rollback_signals(measured=_measured(), agreement=agreement, gates=Gates())
    signals = {s.metric: s for s in found}
    overall = signals["agreement_with_reference"]
    assert overall.measured == 1.0
    assert overall.threshold == pytest.approx(0.9124, abs=1e-3)  # Wilson lower bound of 40/40, not 1.0
    assert signals["agreement_with_reference[b]"].direction == "below"


def _run(
    tmp_path: Path, *, invalid: dict[str, int] | None = None, **variants: list[dict[str, float]]
) -> Path:
    footprints = {"R": 700.0, "A": 450.0, "B": 300.0, "C": 250.0}
    return make_run(tmp_path / "run", variants, footprints=footprints, invalid=invalid)


def test_decide_recommends_the_smallest_variant_that_passes(tmp_path: Path) -> None:
    n = 300  # identical cases: A's interval lies within the ±2-point equivalence margin from 240
    bad = 3 * n // 10  # 30% invalid outputs: below the 90% validity gate, above the 5% error gate
    run = _run(
        tmp_path,
        invalid={"C": bad},
        R=[RIGHT] * n,
        A=[RIGHT] * n,  # identical: passes
        B=[HALF] * n,  # loses field b everywhere: fails the accuracy gate
        C=[{"a": 0.0, "b": 0.0}] * bad + [RIGHT] * (n - bad),
    )
    decision = decide(run, Gates(min_cases=10, min_slice_cases=10))
    assert decision.recommended == "A"
    assert decision.exit_status == 0
    variants = decision.variants
    comparison_a, comparison_b = variants["A"].comparison, variants["B"].comparison
    assert comparison_a is not None
    assert comparison_b is not None
    assert comparison_a.overall.verdict == "equivalent"
    assert comparison_b.overall.verdict == "worse"
    assert comparison_b.overall.delta == pytest.approx(-0.5)
    gate_status = {g.gate: g.status for g in variants["C"].gates}
    assert gate_status["min_format_validity"] == "fail"
    assert gate_status["max_error_rate"] == "fail"
    assert len(variants["B"].regressions) == n
    assert variants["A"].regressions == []
    exported_path = decision.regression_sets["B"].path
    assert exported_path is not None
    exported = run / exported_path
    dataset, problems = check_dataset(exported)
    assert dataset is not None, problems
    assert len(dataset.cases) == n
    assert "A" not in decision.regression_sets
    assert decision.rollback is not None
    assert decision.rollback.variant == "A"
    assert {s.metric for s in decision.rollback.signals} >= {
        "format_validity",
        "agreement_with_reference",
        "agreement_with_reference[b]",
    }
    on_disk = json.loads((run / "decision.json").read_text())
    assert on_disk["recommended"] == "A"
    markdown = (run / "decision.md").read_text()
    assert "**Recommended: A**" in markdown
    assert "regressions/B" in markdown


def test_decide_keeps_the_reference_when_no_variant_is_shown_safe(tmp_path: Path) -> None:
    run = _run(tmp_path, R=[RIGHT] * 5, A=[RIGHT] * 5)
    decision = decide(run, Gates(min_cases=10))  # 5 cases: A's drop gate is inconclusive
    assert decision.recommended == "R"
    assert decision.recommended_is_reference is True
    gate = decision.variants["A"].gates[0]
    assert (gate.gate, gate.status) == ("max_accuracy_drop", "inconclusive")
    assert "Keep the reference" in (run / "decision.md").read_text()


def test_decide_exits_3_when_nothing_fits_the_memory_gate(tmp_path: Path) -> None:
    run = _run(tmp_path, R=[RIGHT] * 12, A=[RIGHT] * 12)
    decision = decide(run, Gates(min_cases=10, max_memory_mb=100))
    assert decision.recommended is None
    assert decision.exit_status == 3
    assert decision.rollback is None
    assert "No variant passes" in (run / "decision.md").read_text()


def test_decide_refuses_a_run_without_reference_records(tmp_path: Path) -> None:
    run = _run(tmp_path, R=[RIGHT] * 3, A=[RIGHT] * 3)
    lines = (run / "records.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["variant"] != "R"]
    assert len(kept) == 3  # the reference's three records are gone, A's remain
    (run / "records.jsonl").write_text("\n".join(kept) + "\n")
    with pytest.raises(DecisionError, match="no records of the reference 'R'"):
        decide(run)
