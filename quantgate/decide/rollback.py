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
from evaluators.statistics import proportion_interval
from quantgate.decide.checks import Measured
from quantgate.inputs.gates import Gates
from quantgate.rundir.decision import RollbackSignal

LATENCY_HEADROOM = 1.5
MEMORY_HEADROOM = 1.2


def _rate_signals(measured: Measured, gates: Gates) -> list[RollbackSignal]:
    signals = []
    level = f"{gates.confidence:.0%}"
    validity = proportion_interval(measured.format_valid, measured.cases, confidence=gates.confidence)
    if validity is not None and measured.format_validity is not None:
        floor = gates.min_format_validity or 0.0
        signals.append(
            RollbackSignal(
                metric="format_validity",
                direction="below",
                threshold=max(validity.low, floor),
                measured=measured.format_validity,
                derivation=f"max(Wilson {level} lower bound {validity.low:.3f}, gate {floor:.3f})",
            )
        )
    errors = proportion_interval(measured.errors, measured.cases, confidence=gates.confidence)
    if errors is not None and measured.error_rate is not None:
        ceiling = gates.max_error_rate if gates.max_error_rate is not None else 1.0
        signals.append(
            RollbackSignal(
                metric="error_rate",
                direction="above",
                threshold=min(errors.high, ceiling),
                measured=measured.error_rate,
                derivation=f"min(Wilson {level} upper bound {errors.high:.3f}, gate {ceiling:.3f})",
            )
        )
    return signals


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
