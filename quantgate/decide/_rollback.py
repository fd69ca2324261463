"""Rollback signals: what production must watch for the chosen variant, and the thresholds.

Each threshold is derived from what the run measured, so that crossing it means the
variant is doing worse in production than the evidence it was chosen on:

- format validity below the lower bound of the measured validity's interval (and never
  below the gate's minimum);
- error rate above the upper bound of the measured rate's interval (and never above the
  gate's maximum);
- agreement with the reference, overall and per field, below the Wilson lower bound of the
  measured agreement (for production traffic shadowed by the reference);
- p95 latency and peak memory above the measured value times a headroom factor (and
  never above the gate's maximum).

Rates should be judged over a window at least as large as the run (`window_cases`), so
that they are as precise as the figures they are compared with.
"""

from __future__ import annotations

from evaluators.comparison import AgreementSummary
from evaluators.rates import proportion
from evaluators.statistics import proportion_interval
from quantgate.decide._checks import Measured
from quantgate.inputs._gates import Gates
from quantgate.rundir._decision import RollbackSignal

LATENCY_HEADROOM = 1.5
MEMORY_HEADROOM = 1.2


def _rate_signals(measured: Measured, gates: Gates) -> list[RollbackSignal]:
    """Validity and error rate: the Wilson bound of the measured share, never looser than the gate."""
    floor = gates.min_format_validity or 0.0
    ceiling = 1.0 if gates.max_error_rate is None else gates.max_error_rate
    return [
        *_rate_signal("format_validity", measured.format_valid, measured.cases, floor, gates.confidence),
        *_rate_signal("error_rate", measured.errors, measured.cases, ceiling, gates.confidence, above=True),
    ]


def _rate_signal(
    metric: str, count: int, cases: int, limit: float, confidence: float, *, above: bool = False
) -> list[RollbackSignal]:
    """A share of the cases: a signal when it rises above its interval's upper bound (`above`) or
    falls below its lower bound, the bound capped by the gate's `limit`."""
    interval = proportion_interval(count, cases, confidence=confidence)
    share = proportion(count, cases)
    if interval is None or share is None:
        return []
    side, bound = ("upper", interval.high) if above else ("lower", interval.low)
    pick = "min" if above else "max"
    return [
        RollbackSignal(
            metric=metric,
            direction="above" if above else "below",
            threshold=min(bound, limit) if above else max(bound, limit),
            measured=share,
            derivation=f"{pick}(Wilson {confidence:.0%} {side} bound {bound:.3f}, gate {limit:.3f})",
        )
    ]


def _headroom_signal(
    metric: str, measured: float | None, factor: float, gate: float | None
) -> list[RollbackSignal]:
    if measured is None:
        return []
    threshold = measured * factor if gate is None else min(measured * factor, gate)
    gate_text = "" if gate is None else f", capped by the gate {gate:.3g}"
    return [
        RollbackSignal(
            metric=metric,
            direction="above",
            threshold=threshold,
            measured=measured,
            derivation=f"measured x {factor}{gate_text}",
        )
    ]


def _agreement_signals(agreement: AgreementSummary, confidence: float) -> list[RollbackSignal]:
    """Agreement thresholds: the Wilson lower bound of the measured agreement over the run's cases.

    Field agreement is mostly 0 or 1 per case, so it is treated as a proportion; unlike a
    bootstrap interval, this does not collapse to the measured value when every case agreed.
    """
    signals = []
    entries = [("agreement_with_reference", agreement.overall)]
    entries += [(f"agreement_with_reference[{name}]", value) for name, (value, _) in agreement.fields.items()]
    for metric, value in entries:
        if value is None:
            continue
        bound = proportion_interval(round(value * agreement.cases), agreement.cases, confidence=confidence)
        if bound is None:
            continue
        signals.append(
            RollbackSignal(
                metric=metric,
                direction="below",
                threshold=bound.low,
                measured=value,
                derivation=f"Wilson {confidence:.0%} lower bound over {agreement.cases} cases",
            )
        )
    return signals


def rollback_signals(
    *, measured: Measured, agreement: AgreementSummary | None, gates: Gates
) -> list[RollbackSignal]:
    """The signals for the chosen variant.

    Args:
        measured: The chosen variant's figures.
        agreement: Its agreement with the reference (None when it is the reference).
        gates: The gates it was chosen under.
    """
    signals = _rate_signals(measured, gates)
    signals += _headroom_signal(
        "latency_s_p95", measured.latency_s_p95, LATENCY_HEADROOM, gates.max_p95_latency_s
    )
    signals += _headroom_signal("memory_mb", measured.memory_mb, MEMORY_HEADROOM, gates.max_memory_mb)
    if agreement is not None:
        signals += _agreement_signals(agreement, gates.confidence)
    return signals
