"""Judging one variant against the gates, from its records and its paired comparison.

Every figure comes from the run's records (accuracy, validity, errors, latency) or, for
memory, from the summary the run's sampler wrote. A gate whose figure was not measured
is `not_measured`, never passed: a variant passes only on evidence. `GATE_CHECKS` holds every
gate's check, keyed by its field of `Gates`; `judge_variant` runs those whose threshold is set.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from evaluators.comparison import Comparison, IntervalMethod, PairedDelta
from evaluators.flips import FlipSummary
from evaluators.latency import latency_p95
from evaluators.rates import proportion
from evaluators.sequential import drop_status
from evaluators.statistics import Interval, proportion_interval
from quantgate._formatting import points
from quantgate.capacity._capacity_checks import CapacityInputs, goodput_result, parallel_sequences_result
from quantgate.decide._flip_check import flip_share_result
from quantgate.inputs._gates import Gates
from quantgate.rundir._decision import GateResult, GateStatus
from quantgate.rundir._embedding_files import EmbeddingEntry
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._runtime_comparison import RuntimeComparison
from quantgate.rundir._summary import VariantEntry


@dataclass(frozen=True, kw_only=True)
class Measured:
    """A variant's figures, recomputed from its records (and memory from its summary)."""

    cases: int
    format_valid: int
    errors: int
    latency_s_p95: float | None
    memory_mb: float | None
    memory_source: str
    footprint_mb: float | None
    footprint_source: str

    @property
    def format_validity(self) -> float | None:
        """Share of cases whose output parsed and matched the schema."""
        return proportion(self.format_valid, self.cases)

    @property
    def error_rate(self) -> float | None:
        """Share of cases that ended in an error."""
        return proportion(self.errors, self.cases)


def _first_measured(entry: VariantEntry, keys: Sequence[str]) -> tuple[float | None, str]:
    for key in keys:
        value = getattr(entry, key)
        if value is not None:
            return float(value), key
    return None, "not measured"


def measure(
    records: Sequence[CaseRecord], entry: VariantEntry, *, timed: Collection[str] | None = None
) -> Measured:
    """A variant's gate figures from its records and its summary entry; p95 latency over the `timed`
    cases only when given (the run's latency sample, which every variant decoded in full: the
    reference's other cases were decoded too, the candidates' verified).

    Memory for the gate is the peak RSS of the process holding the model (`memory_mb`),
    else the model's own footprint; the ranking footprint is the model's own
    (`model_memory_mb`: RSS growth on load, or the server's figure), else the file size.
    """
    totals = [r.total_s for r in records if r.total_s is not None and (timed is None or r.case_id in timed)]
    memory, memory_source = _first_measured(entry, ("memory_mb", "model_memory_mb"))
    footprint, footprint_source = _first_measured(entry, ("model_memory_mb", "file_size_mb", "memory_mb"))
    return Measured(
        cases=len(records),
        format_valid=sum(r.counts_as_format_valid for r in records),
        errors=sum(r.error_kind is not None for r in records),
        latency_s_p95=latency_p95(totals),
        memory_mb=memory,
        memory_source=memory_source,
        footprint_mb=footprint,
        footprint_source=footprint_source,
    )


def judge_drop(
    gate: str, delta: PairedDelta, *, max_drop: float, min_cases: int, method: IntervalMethod = "betting"
) -> GateResult:
    """An accuracy-drop gate: pass when the interval's lower bound is above -max_drop.

    With the betting interval of a fixed sample, fewer than `min_cases` paired cases are
    inconclusive and a drop whose estimate is beyond the threshold fails. With the sequential method the
    interval is a confidence sequence: the gate fails only when all of it lies beyond the
    threshold (`evaluators.sequential.drop_status`, the rule the run stops by), and any number
    of cases may settle it.
    """
    threshold = -max_drop
    if delta.delta is None or delta.interval is None:
        return GateResult(
            gate=gate,
            status="not_measured",
            value=None,
            threshold=threshold,
            evidence="no labeled paired cases",
        )
    low, high = delta.interval.low, delta.interval.high
    limit = points(threshold, " pts")
    shown = f"delta {points(delta.delta, ' pts')}, CI [{points(low, ' pts')}, {points(high, ' pts')}]"
    status: GateStatus
    if method == "sequential":
        settled = drop_status(interval=delta.interval, max_drop=max_drop)
        status = "inconclusive" if settled == "undecided" else settled
        why = {
            "pass": f"confidence sequence lower bound ≥ {limit}",
            "fail": f"the whole confidence sequence lies below {limit}",
            "undecided": f"the confidence sequence straddles {limit}",
        }[settled]
    elif delta.cases < min_cases:
        status, why = "inconclusive", f"{delta.cases} paired cases, fewer than {min_cases}"
    elif low >= threshold:
        status, why = "pass", f"CI lower bound ≥ {limit}"
    elif delta.delta < threshold:
        status, why = "fail", f"the drop itself is beyond {limit}"
    else:
        status, why = "inconclusive", f"the CI reaches below {limit}: the drop may exceed it"
    return GateResult(
        gate=gate,
        status=status,
        value=delta.delta,
        threshold=threshold,
        interval=delta.interval,
        evidence=f"{shown} over {delta.cases} cases: {why}",
    )


def _reference_drop(gate: str, max_drop: float) -> GateResult:
    return GateResult(
        gate=gate, status="pass", value=0.0, threshold=-max_drop, evidence="the reference itself"
    )


def _limit(
    gate: str,
    value: float | None,
    threshold: float,
    *,
    upper: bool,
    unit: str,
    interval: Interval | None = None,
) -> GateResult:
    if value is None:
        return GateResult(
            gate=gate, status="not_measured", value=None, threshold=threshold, evidence="not measured"
        )
    ok = value <= threshold if upper else value >= threshold
    sign = "≤" if upper else "≥"
    shown = f"{value:.3g}{unit}" + (f" (CI {interval.low:.3g} to {interval.high:.3g})" if interval else "")
    return GateResult(
        gate=gate,
        status="pass" if ok else "fail",
        value=value,
        threshold=threshold,
        interval=interval,
        evidence=f"{shown} {'is' if ok else 'is not'} {sign} {threshold:.3g}{unit}",
    )


@dataclass(frozen=True, kw_only=True)
class GateEvidence:
    """What one variant's gates are judged on (see `judge_variant`).

    Attributes:
        measured: The variant's figures.
        comparison: Its paired comparison with the reference (None for the reference, or
            when nothing could be paired).
        gates: The thresholds.
        is_reference: The reference passes the accuracy-drop gates by definition.
        method: How the comparison's intervals were computed (see `judge_drop`).
        embeddings: The variant's embedding figures (`run --embeddings`), for the embedding gates.
        capacity: Its memory-model record, KV-cache type and goodput level, for the capacity gates.
        runtime: Its comparison with the variant of the same model file on another backend (None:
            it is no such pair's compared variant; `quantgate.decide._runtimes`).
        runtime_base: It is the base of a runtime comparison.
        flips: Its flips against the reference on the labeled paired cases (None: nothing paired).
        flip_noise_floor: The reference's own flip share against itself, when the run measured it
            (shown beside the flip gate; None: not measured).
    """

    measured: Measured
    comparison: Comparison | None
    gates: Gates
    is_reference: bool
    method: IntervalMethod = "betting"
    embeddings: EmbeddingEntry | None = None
    capacity: CapacityInputs = field(default_factory=CapacityInputs)
    runtime: RuntimeComparison | None = None
    runtime_base: bool = False
    flips: FlipSummary | None = None
    flip_noise_floor: float | None = None


GateCheck = Callable[[str, float, GateEvidence], list[GateResult]]
"""A gate's check: (the gate's name, its threshold, the evidence) -> its results (usually one)."""


def judge_variant(evidence: GateEvidence) -> list[GateResult]:
    """Every set gate's verdict for one variant, in the order of `GATE_CHECKS`."""
    results: list[GateResult] = []
    for gate, check in GATE_CHECKS.items():
        threshold = getattr(evidence.gates, gate)
        if threshold is not None:
            results.extend(check(gate, float(threshold), evidence))
    return results


def _accuracy_drop(gate: str, max_drop: float, e: GateEvidence) -> list[GateResult]:
    if e.is_reference:
        return [_reference_drop(gate, max_drop)]
    if e.comparison is None:
        return [
            GateResult(
                gate=gate,
                status="not_measured",
                value=None,
                threshold=-max_drop,
                evidence="no paired cases with the reference",
            )
        ]
    overall = e.comparison.overall
    return [judge_drop(gate, overall, max_drop=max_drop, min_cases=e.gates.min_cases, method=e.method)]


def _slice_accuracy_drops(gate: str, max_drop: float, e: GateEvidence) -> list[GateResult]:
    if e.comparison is None or e.is_reference:
        return []
    min_cases = e.gates.min_slice_cases
    return [
        judge_drop(f"{gate}[{tag}]", delta, max_drop=max_drop, min_cases=min_cases, method=e.method)
        for tag, delta in e.comparison.slices.items()
        if delta.cases >= min_cases
    ]


def _runtime_accuracy_drop(gate: str, max_drop: float, e: GateEvidence) -> list[GateResult]:
    """The accuracy drop against the same model file on another backend, judged as `max_accuracy_drop`
    is; a pair's base passes by definition, as the reference does."""
    if e.runtime is None:
        if e.runtime_base or e.is_reference:
            itself = "the base of its runtime comparison" if e.runtime_base else "the reference itself"
            return [GateResult(gate=gate, status="pass", value=0.0, threshold=-max_drop, evidence=itself)]
        why = "no variant of the same model file (sha256) on another backend"
        return [GateResult(gate=gate, status="not_measured", value=None, threshold=-max_drop, evidence=why)]
    base = e.runtime.base
    if e.runtime.accuracy is None:
        why = f"no labeled paired cases with {base}"
        return [GateResult(gate=gate, status="not_measured", value=None, threshold=-max_drop, evidence=why)]
    found = judge_drop(
        gate, e.runtime.accuracy, max_drop=max_drop, min_cases=e.gates.min_cases, method=e.method
    )
    return [found.model_copy(update={"evidence": f"vs {base} ({e.runtime.base_backend}): {found.evidence}"})]


def _limit_check(
    figure: Callable[[GateEvidence], float | None],
    *,
    upper: bool,
    unit: str = "",
    interval: Callable[[GateEvidence], Interval | None] | None = None,
    reference_passes: bool = False,
) -> GateCheck:
    """A gate on a figure: pass when it is at most (`upper`) or at least the threshold; with
    `reference_passes`, the reference passes it by definition."""

    def check(gate: str, threshold: float, e: GateEvidence) -> list[GateResult]:
        if reference_passes and e.is_reference:
            itself = "the reference itself"
            return [GateResult(gate=gate, status="pass", value=None, threshold=threshold, evidence=itself)]
        shown = interval(e) if interval else None
        return [_limit(gate, figure(e), threshold, upper=upper, unit=unit, interval=shown)]

    return check


def _recall_drop(gate: str, max_drop: float, e: GateEvidence) -> list[GateResult]:
    """Pass: the paired interval's low end is above -max_drop; fail: its high end is below."""
    entry = e.embeddings
    if e.is_reference:
        return [_reference_drop(gate, max_drop)]
    interval = entry.recall_delta_interval if entry else None
    if entry is None or entry.recall_delta is None or interval is None:
        why = "no embedding figures" if entry is None else "no relevance labels (a corpus of case texts)"
        return [GateResult(gate=gate, status="not_measured", value=None, threshold=-max_drop, evidence=why)]
    if interval.low >= -max_drop:
        status: GateStatus = "pass"
    elif interval.high < -max_drop:
        status = "fail"
    else:
        status = "inconclusive"
    return [
        GateResult(
            gate=gate,
            status=status,
            value=entry.recall_delta,
            threshold=-max_drop,
            interval=interval,
            evidence=f"recall@{entry.k} {points(entry.recall_delta, ' pts')} over {entry.queries} queries, "
            f"CI [{points(interval.low)}, {points(interval.high)}] against -{max_drop * 100:.1f}",
        )
    ]


def _wilson(e: GateEvidence, count: int) -> Interval | None:
    """The Wilson interval of a count of the variant's cases, at the gates' confidence."""
    return proportion_interval(count, e.measured.cases, confidence=e.gates.confidence)


GATE_CHECKS: Mapping[str, GateCheck] = MappingProxyType(
    {
        "max_accuracy_drop": _accuracy_drop,
        "max_slice_accuracy_drop": _slice_accuracy_drops,
        "max_runtime_accuracy_drop": _runtime_accuracy_drop,
        "max_flip_share": lambda gate, threshold, e: [
            flip_share_result(
                gate, threshold, e.flips, noise_floor=e.flip_noise_floor, is_reference=e.is_reference
            )
        ],
        "min_format_validity": _limit_check(
            lambda e: e.measured.format_validity,
            upper=False,
            interval=lambda e: _wilson(e, e.measured.format_valid),
        ),
        "max_error_rate": _limit_check(
            lambda e: e.measured.error_rate, upper=True, interval=lambda e: _wilson(e, e.measured.errors)
        ),
        "max_memory_mb": _limit_check(lambda e: e.measured.memory_mb, upper=True, unit=" MiB"),
        "max_p95_latency_s": _limit_check(lambda e: e.measured.latency_s_p95, upper=True, unit=" s"),
        "min_neighbour_recall": _limit_check(
            lambda e: e.embeddings.neighbour_recall_at_k if e.embeddings else None,
            upper=False,
            reference_passes=True,
        ),
        "min_cosine_p5": _limit_check(
            lambda e: e.embeddings.cosine_p5 if e.embeddings else None, upper=False, reference_passes=True
        ),
        "max_recall_drop": _recall_drop,
        "min_parallel_sequences": lambda gate, threshold, e: [
            parallel_sequences_result(gate, threshold, e.capacity.memory_model, e.capacity.kv_cache, e.gates)
        ],
        "min_goodput_rps": lambda gate, threshold, e: [
            goodput_result(gate, threshold, e.capacity.goodput_level)
        ],
    }
)
"""Every gate's check, keyed by its `Gates` field (`THRESHOLD_KEYS`), in the order its results are listed."""


def passes(results: Sequence[GateResult]) -> bool:
    """A variant passes when every gate passed (inconclusive and not measured do not)."""
    return all(r.status == "pass" for r in results)
