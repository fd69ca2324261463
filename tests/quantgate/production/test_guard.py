"""The online guard: window, minimum count, trip once per crossing, recovery, reset, and the
signals of a real decision; the guard node after the extraction graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph.graph import END, START, StateGraph

from graphs.extraction import ExtractionContext
from graphs.extraction import graph as extraction_graph
from quantgate.decide._recommendation import decide, load_decision
from quantgate.inputs._gates import Gates
from quantgate.production._guard import GuardedExtractionState, OnlineGuard, SignalReading, guard_node
from quantgate.production._observation import Observation
from quantgate.rundir._decision import RollbackSignal
from tests.fakes import QueuedChatModel
from tests.quantgate.run_factory import SCHEMA, make_run

RIGHT = {"a": 1.0, "b": 1.0}


def _validity_guard(**kwargs) -> tuple[OnlineGuard, list[list[SignalReading]]]:
    calls: list[list[SignalReading]] = []
    guard = OnlineGuard.from_thresholds(min_format_validity=0.8, on_trip=calls.append, **kwargs)
    return guard, calls


def test_nothing_is_judged_before_the_minimum_count() -> None:
    guard, calls = _validity_guard(window=5, min_count=3)
    assert guard.observe(format_valid=False) == []
    assert guard.observe(format_valid=False) == []
    (reading,) = guard.status().readings
    assert reading.value is None
    assert reading.count == 2
    assert not guard.tripped
    assert calls == []
    crossed = guard.observe(format_valid=True)  # 1/3 valid, now judged
    assert [r.signal.metric for r in crossed] == ["format_validity"]
    assert crossed[0].value == pytest.approx(1 / 3)
    assert guard.tripped


def test_a_crossing_is_reported_once_while_it_lasts() -> None:
    guard, calls = _validity_guard(window=4, min_count=4)
    for _ in range(4):
        guard.observe(format_valid=True)
    assert not guard.tripped
    guard.observe(format_valid=False)  # 3/4 = 0.75 < 0.8
    guard.observe(format_valid=False)
    guard.observe(format_valid=False)
    assert len(calls) == 1
    (reading,) = calls[0]
    assert reading.signal.metric == "format_validity"
    assert reading.value == pytest.approx(0.75)
    assert reading.crossed
    assert guard.status().crossed[0].value == pytest.approx(0.25)


def test_recovery_rearms_the_signal_and_the_flag_stays_until_reset() -> None:
    guard, calls = _validity_guard(window=4, min_count=4)
    for valid in (True, True, True, False):  # crosses on the 4th call
        guard.observe(format_valid=valid)
    for _ in range(4):  # the invalid call leaves the window
        guard.observe(format_valid=True)
    status = guard.status()
    assert status.crossed == ()
    assert status.tripped  # latched: a rollback flag does not flap
    guard.observe(format_valid=False)  # crosses again: reported again
    assert len(calls) == 2
    guard.reset()
    status = guard.status()
    assert (status.tripped, status.observed, status.in_window) == (False, 0, 0)
    assert status.readings[0].value is None


def test_the_window_slides() -> None:
    guard, _ = _validity_guard(window=3, min_count=1)
    for valid in (False, False, False, True, True, True):
        guard.observe(format_valid=valid)
    status = guard.status()
    assert status.observed == 6
    assert status.in_window == 3
    assert status.readings[0].value == 1.0
    assert status.readings[0].count == 3


def test_error_rate_latency_and_memory_figures() -> None:
    guard = OnlineGuard.from_thresholds(
        max_error_rate=0.3, max_latency_s_p95=5.0, max_memory_mb=900, window=10, min_count=4
    )
    for latency in (1.0, 1.0, 1.0, 9.0):
        guard.observe(format_valid=True, latency_s=latency)
    readings = {r.signal.metric: r for r in guard.status().readings}
    assert readings["error_rate"].value == 0.0
    assert readings["latency_s_p95"].value == pytest.approx(7.8)  # numpy's linear interpolation
    assert readings["latency_s_p95"].crossed
    assert str(readings["latency_s_p95"]) == "latency_s_p95 7.8 over 4 calls (rollback above 5): CROSSED"
    assert readings["memory_mb"].value is None  # never read
    assert readings["memory_mb"].count == 0
    guard.observe(format_valid=False, error=True, memory_mb=950)
    guard.observe(format_valid=False, error=True)
    readings = {r.signal.metric: r for r in guard.status().readings}
    assert readings["error_rate"].value == pytest.approx(2 / 6)
    assert readings["error_rate"].crossed
    assert readings["memory_mb"].value is None  # one reading, fewer than min_count
    assert str(readings["memory_mb"]) == "memory_mb not judged yet over 1 calls (rollback above 900): ok"


def test_agreement_is_pooled_over_fields_and_counts_only_shadowed_calls() -> None:
    signals = [
        RollbackSignal(
            metric="agreement_with_reference", direction="below", threshold=0.7, measured=0.9, derivation=""
        ),
        RollbackSignal(
            metric="agreement_with_reference[b]",
            direction="below",
            threshold=0.6,
            measured=0.9,
            derivation="",
        ),
    ]
    guard = OnlineGuard(signals=signals, window=10, min_count=2)
    guard.observe(format_valid=True)  # not shadowed
    guard.observe(format_valid=True, agreement={"a": 1.0, "b": 0.0})
    guard.observe(format_valid=True, agreement={"a": 1.0, "b": 1.0})
    overall, field_b = guard.status().readings
    assert (overall.value, overall.count) == (0.75, 2)
    assert (field_b.value, field_b.count) == (0.5, 2)
    assert field_b.crossed
    assert not overall.crossed


def test_signals_and_window_must_make_sense() -> None:
    odd = RollbackSignal(metric="mood", direction="below", threshold=1.0, measured=1.0, derivation="")
    with pytest.raises(ValueError, match="unknown metrics"):
        OnlineGuard(signals=[odd])
    with pytest.raises(ValueError, match="min_count"):
        OnlineGuard.from_thresholds(max_error_rate=0.1, window=5, min_count=6)


CASES = 100  # Q answers as R on every case: enough to show its accuracy drop is under 5 points


def _decided_run(tmp_path: Path, *, max_memory_mb: float | None = None) -> Path:
    """Q recommended with one invalid output in `CASES`; its error rate (1%) under a 2.5% gate."""
    run = make_run(
        tmp_path / "run",
        {"R": [RIGHT] * CASES, "Q": [RIGHT] * CASES},
        footprints={"R": 700.0, "Q": 300.0},
        invalid={"Q": 1},
    )
    decide(
        run,
        Gates(
            min_cases=10,
            min_slice_cases=10,
            max_error_rate=0.025,
            min_format_validity=0.5,
            max_memory_mb=max_memory_mb,
        ),
    )
    return run


def test_from_decision_watches_the_recommended_variants_signals(tmp_path: Path) -> None:
    run = _decided_run(tmp_path)
    decision = json.loads((run / "decision.json").read_text())
    assert decision["recommended"] == "Q"
    calls: list[list[SignalReading]] = []
    guard = OnlineGuard.from_decision(run, on_trip=calls.append)
    assert [s.metric for s in guard.signals] == [s["metric"] for s in decision["rollback"]["signals"]]
    assert (guard.window, guard.min_count) == (CASES, CASES)  # the run judged Q on CASES cases
    validity = next(s for s in guard.signals if s.metric == "format_validity")
    assert validity.threshold == decision["rollback"]["signals"][0]["threshold"]
    for _ in range(CASES):
        guard.observe(format_valid=True, latency_s=1.0, agreement={"a": 1.0, "b": 1.0})
    assert not guard.tripped
    for _ in range(6):
        guard.observe(format_valid=False, error=True, latency_s=1.0, agreement={"a": 1.0, "b": 1.0})
    assert guard.tripped
    # over a window of 100 calls, the error rate (the gate 0.025, under the Wilson upper bound 0.054
    # of 1/100) crosses at the 3rd failure, validity (the Wilson lower bound 0.946 of 99/100) at the 6th
    assert [[r.signal.metric for r in crossed] for crossed in calls] == [["error_rate"], ["format_validity"]]
    same = OnlineGuard.from_decision(run / "decision.json", window=50, min_count=20)
    assert (same.window, same.min_count) == (50, 20)
    # a window larger than the run: the minimum count is still the run's cases
    assert OnlineGuard.from_decision(decision, window=200).min_count == CASES  # decision.json's mapping
    typed = OnlineGuard.from_decision(load_decision(run), window=200)
    assert (typed.signals, typed.window, typed.min_count) == (guard.signals, 200, CASES)


def test_from_decision_without_a_recommendation(tmp_path: Path) -> None:
    run = _decided_run(tmp_path, max_memory_mb=100)
    with pytest.raises(ValueError, match="recommends no variant"):
        OnlineGuard.from_decision(run)


GOOD = json.dumps({"a": "x", "b": 2})


def _context(outputs: list[object]) -> ExtractionContext:
    return ExtractionContext(model=QueuedChatModel(outputs=outputs), schema=SCHEMA, max_repairs=1)


def test_observation_from_extraction_judges_as_the_run_did() -> None:
    context = _context([GOOD])
    output = extraction_graph.invoke({"text": "t"}, context=context)
    seen = Observation.from_extraction(output, context=context, reference_record={"a": "x", "b": 3})
    assert seen.format_valid
    assert not seen.error
    assert seen.latency_s is not None
    assert seen.latency_s > 0
    assert seen.agreement == {"a": 1.0, "b": 0.0}
    invalid = _context(['{"a": 1}'])
    failed = Observation.from_extraction(
        extraction_graph.invoke({"text": "t"}, context=invalid), context=invalid
    )
    assert (failed.format_valid, failed.error, failed.agreement) == (False, True, None)
    broken = _context([RuntimeError("server down")])
    errored = Observation.from_extraction(
        extraction_graph.invoke({"text": "t"}, context=broken), context=broken
    )
    assert (errored.format_valid, errored.error, errored.latency_s) == (False, True, None)


def test_a_fenced_answer_is_format_valid_as_in_the_run() -> None:
    context = _context([f"```json\n{GOOD}\n```"])
    output = extraction_graph.invoke({"text": "t"}, context=context)
    assert Observation.from_extraction(output, context=context).format_valid


def test_guard_node_after_the_extraction_graph() -> None:
    calls: list[list[SignalReading]] = []
    guard = OnlineGuard.from_thresholds(
        min_format_validity=0.9, max_memory_mb=1000, window=2, min_count=2, on_trip=calls.append
    )
    builder = StateGraph(GuardedExtractionState, context_schema=ExtractionContext)
    builder.add_node("extraction", extraction_graph)
    builder.add_node("guard", guard_node(guard, memory_mb=lambda: 512.0))
    builder.add_edge(START, "extraction")
    builder.add_edge("extraction", "guard")
    builder.add_edge("guard", END)
    app = builder.compile()
    context = ExtractionContext(
        model=QueuedChatModel(outputs=[GOOD, "not json"]), schema=SCHEMA, max_repairs=0
    )
    first = app.invoke({"text": "one", "reference_record": {"a": "x", "b": 2}}, context=context)
    assert first["valid"]
    assert first["record"] == {"a": "x", "b": 2.0}
    assert (first["guard_tripped"], first["guard_crossed"]) == (False, [])
    second = app.invoke({"text": "two"}, context=context)
    assert not second["valid"]
    assert (second["guard_tripped"], second["guard_crossed"]) == (True, ["format_validity"])
    assert len(calls) == 1
    status = guard.status()
    assert status.observed == 2
    assert status.readings[1].value == 512.0  # read by the node after each call
