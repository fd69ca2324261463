"""The online guard: the decision's rollback signals, watched over a window of production calls.

`quantgate decide` derives rollback signals for the variant it recommends (quantgate/decide/_rollback.py):
format validity, error rate, p95 latency, memory and, for traffic shadowed by the reference,
agreement with it. `OnlineGuard` watches them in production, computing each figure as the run
computed it, and `guard_node` makes it a LangGraph node to put after the extraction graph:

    guard = OnlineGuard.from_decision(chosen.decision, on_trip=page_someone)
    guard.observe(format_valid=True, latency_s=2.1)          # one production call
    guard.tripped, guard.status().crossed                     # the flag, and why
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from langgraph.runtime import Runtime

from evaluators.latency import latency_p95
from graphs.extraction import ExtractionContext, ExtractionState
from quantgate._formatting import compact
from quantgate.production._observation import AGREEMENT, METRICS, Observation
from quantgate.rundir._decision import Decision, RollbackSignal
from quantgate.rundir._files import DECISION_JSON
from quantgate.rundir._store import parse_model, read_decision


@dataclass(frozen=True, kw_only=True)
class SignalReading:
    """A signal's figure over the current window.

    Attributes:
        signal: The rollback signal.
        value: The window's figure; None while fewer than `min_count` observations measured it.
        count: Observations in the window that measured it.
        crossed: The value is beyond the threshold.
    """

    signal: RollbackSignal
    value: float | None
    count: int
    crossed: bool

    def __str__(self) -> str:
        shown = "not judged yet" if self.value is None else compact(self.value)
        mark = "CROSSED" if self.crossed else "ok"
        return (
            f"{self.signal.metric} {shown} over {self.count} calls "
            f"(rollback {self.signal.direction} {compact(self.signal.threshold)}): {mark}"
        )


@dataclass(frozen=True, kw_only=True)
class GuardStatus:
    """The guard's state: what it has seen and where each signal stands."""

    observed: int
    in_window: int
    tripped: bool
    readings: tuple[SignalReading, ...]

    @property
    def crossed(self) -> tuple[SignalReading, ...]:
        """The signals beyond their threshold now."""
        return tuple(r for r in self.readings if r.crossed)


TripCallback = Callable[[list[SignalReading]], None]
"""Called with the signals that have just crossed their threshold."""


def _known(metric: str) -> bool:
    return metric in METRICS or (metric.startswith(f"{AGREEMENT}[") and metric.endswith("]"))


def _window_figure(metric: str, values: list[float]) -> float | None:
    if not values:
        return None
    if metric == "latency_s_p95":
        return latency_p95(values)
    if metric == "memory_mb":
        return max(values)
    return sum(values) / len(values)


class OnlineGuard:
    """Watches rollback signals over a sliding window of production calls (thread-safe).

    A signal is judged once the window holds `min_count` observations that measured it. When
    it crosses its threshold, `record` returns it and `on_trip` is called with it, once per
    crossing: it is reported again only after it has come back and crossed anew. `tripped`
    stays set from the first crossing until `reset()`, so the flag does not flap.

    Args:
        signals: What to watch (from a decision, or made by hand).
        window: How many recent calls each figure is computed over.
        min_count: Observations a signal needs in the window before it is judged
            (default: the whole window).
        on_trip: Called with the signals that have just crossed (once per crossing),
            after the observation is recorded.

    Raises:
        ValueError: An unknown metric, or a window or minimum count that cannot work.
    """

    def __init__(
        self,
        *,
        signals: Sequence[RollbackSignal],
        window: int = 100,
        min_count: int | None = None,
        on_trip: TripCallback | None = None,
    ) -> None:
        unknown = [s.metric for s in signals if not _known(s.metric)]
        if unknown:
            raise ValueError(f"unknown metrics {unknown}; known: {', '.join(METRICS)}, {AGREEMENT}[<field>]")
        min_count = window if min_count is None else min_count
        if window < 1 or not 1 <= min_count <= window:
            raise ValueError(f"need window >= 1 and 1 <= min_count <= window, got {window} and {min_count}")
        self.signals = tuple(signals)
        self.window = window
        self.min_count = min_count
        self.on_trip = on_trip
        self._observations: deque[Observation] = deque(maxlen=window)
        self._crossed: set[str] = set()
        self._tripped = False
        self._observed = 0
        self._lock = threading.Lock()

    @classmethod
    def from_decision(
        cls,
        decision: Decision | Mapping[str, Any] | str | Path,
        *,
        window: int | None = None,
        min_count: int | None = None,
        on_trip: TripCallback | None = None,
    ) -> OnlineGuard:
        """A guard on the rollback signals of a decision's recommended variant.

        Args:
            decision: The decision (as `load_decision` returns it), a run directory or its
                decision.json.
            window: Calls per window; default the number of cases the run judged the variant
                on, since the thresholds are only as precise as that.
            min_count: Default: that same number of cases, capped by the window.
            on_trip: See `OnlineGuard`.

        Raises:
            ValueError: The decision recommends no variant, so it has no rollback signals.
        """
        if isinstance(decision, str | Path):
            path = Path(decision)
            decision = read_decision(path.parent if path.name == DECISION_JSON else path)
        elif not isinstance(decision, Decision):
            decision = parse_model(Decision, decision, where="the decision given")
        rollback = decision.rollback
        if rollback is None:
            raise ValueError("the decision recommends no variant, so there are no rollback signals to watch")
        signals = list(rollback.signals)
        cases = max(rollback.window_cases, 1)
        size = window or cases
        floor = min(cases, size) if min_count is None else min_count
        return cls(signals=signals, window=size, min_count=floor, on_trip=on_trip)

    @classmethod
    def from_thresholds(
        cls,
        *,
        min_format_validity: float | None = None,
        max_error_rate: float | None = None,
        max_latency_s_p95: float | None = None,
        max_memory_mb: float | None = None,
        min_agreement: float | None = None,
        window: int = 100,
        min_count: int | None = None,
        on_trip: TripCallback | None = None,
    ) -> OnlineGuard:
        """A guard on thresholds set by hand (None: not watched; `measured` is NaN: no run measured them)."""
        chosen: list[tuple[str, Literal["below", "above"], float | None]] = [
            ("format_validity", "below", min_format_validity),
            ("error_rate", "above", max_error_rate),
            ("latency_s_p95", "above", max_latency_s_p95),
            ("memory_mb", "above", max_memory_mb),
            (AGREEMENT, "below", min_agreement),
        ]
        signals = [
            RollbackSignal(
                metric=metric,
                direction=direction,
                threshold=threshold,
                measured=float("nan"),
                derivation="set by hand",
            )
            for metric, direction, threshold in chosen
            if threshold is not None
        ]
        return cls(signals=signals, window=window, min_count=min_count, on_trip=on_trip)

    def observe(
        self,
        *,
        format_valid: bool,
        error: bool = False,
        latency_s: float | None = None,
        memory_mb: float | None = None,
        agreement: Mapping[str, float] | None = None,
        reviewed_wrong: bool | None = None,
    ) -> list[SignalReading]:
        """Record one production call (see `Observation` for the arguments).

        Returns:
            The signals this call made cross their threshold (usually none).
        """
        observation = Observation(
            format_valid=format_valid,
            error=error,
            latency_s=latency_s,
            memory_mb=memory_mb,
            agreement=agreement,
            reviewed_wrong=reviewed_wrong,
        )
        return self.record(observation)

    def observe_extraction(
        self,
        output: Mapping[str, Any],
        *,
        context: ExtractionContext,
        reference_record: Mapping[str, Any] | None = None,
        memory_mb: float | None = None,
    ) -> list[SignalReading]:
        """Record one output of the extraction graph (see `Observation.from_extraction`)."""
        observation = Observation.from_extraction(
            output, context=context, reference_record=reference_record, memory_mb=memory_mb
        )
        return self.record(observation)

    def record(self, observation: Observation) -> list[SignalReading]:
        """Record an observation; call `on_trip` with the signals it made cross, if any."""
        with self._lock:
            self._observations.append(observation)
            self._observed += 1
            readings = self._readings()
            newly = [r for r in readings if r.crossed and r.signal.metric not in self._crossed]
            self._crossed = {r.signal.metric for r in readings if r.crossed}
            self._tripped = self._tripped or bool(newly)
        if newly and self.on_trip is not None:
            self.on_trip(newly)
        return newly

    def _readings(self) -> tuple[SignalReading, ...]:
        readings = []
        for signal in self.signals:
            measured = [o.values(signal.metric) for o in self._observations]
            counted = [values for values in measured if values is not None]
            value = None
            if len(counted) >= self.min_count:
                value = _window_figure(signal.metric, [v for values in counted for v in values])
            crossed = value is not None and (
                value < signal.threshold if signal.direction == "below" else value > signal.threshold
            )
            readings.append(SignalReading(signal=signal, value=value, count=len(counted), crossed=crossed))
        return tuple(readings)

    @property
    def tripped(self) -> bool:
        """Whether any signal has crossed since the guard was made or last reset."""
        return self._tripped

    def status(self) -> GuardStatus:
        """Where every signal stands over the current window."""
        with self._lock:
            return GuardStatus(
                observed=self._observed,
                in_window=len(self._observations),
                tripped=self._tripped,
                readings=self._readings(),
            )

    def reset(self) -> None:
        """Forget every observation and clear the flag (after a rollback, or a fix)."""
        with self._lock:
            self._observations.clear()
            self._crossed = set()
            self._tripped = False
            self._observed = 0


class GuardedExtractionState(ExtractionState, total=False):
    """State of a production graph that runs the extraction graph, then the guard.

    `reference_record` is a shadow reference's record for the same text, when there is one
    (it feeds the agreement signals); `guard_tripped` and `guard_crossed` are the guard's
    flag and the metrics over their threshold after this call.
    """

    reference_record: dict[str, Any] | None
    guard_tripped: bool
    guard_crossed: list[str]


class GuardNode(Protocol):
    """A node function: the graph's state and runtime in, the guard's keys out."""

    def __call__(
        self, state: GuardedExtractionState, *, runtime: Runtime[ExtractionContext]
    ) -> dict[str, Any]: ...


def guard_node(guard: OnlineGuard, *, memory_mb: Callable[[], float] | None = None) -> GuardNode:
    """A LangGraph node that records the extraction's output in `guard`.

    Put it after the extraction graph in a graph whose state is `GuardedExtractionState`
    and whose context is the `ExtractionContext` the extraction ran with:

        builder = StateGraph(GuardedExtractionState, context_schema=ExtractionContext)
        builder.add_node("extraction", extraction_graph)
        builder.add_node("guard", guard_node(guard))
        builder.add_edge(START, "extraction")
        builder.add_edge("extraction", "guard")
        builder.add_edge("guard", END)

    Args:
        guard: The guard to feed.
        memory_mb: Reads the RSS of the process holding the model after each call (for
            the embedded backend: `quantgate.evaluate._memory_sampler.rss_mb`).
    """

    def guard_call(state: GuardedExtractionState, *, runtime: Runtime[ExtractionContext]) -> dict[str, Any]:
        guard.observe_extraction(
            state,
            context=runtime.context,
            reference_record=state.get("reference_record"),
            memory_mb=memory_mb() if memory_mb is not None else None,
        )
        status = guard.status()
        return {"guard_tripped": status.tripped, "guard_crossed": [r.signal.metric for r in status.crossed]}

    return guard_call
