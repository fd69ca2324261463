"""One variant's progress through a run in rounds, its warm workers, and its result.

A `Track` holds what the run knows of a variant while rounds go on: its outcomes (read back
from a resumed run's records, served from the reference cache, or evaluated now), the time
its rounds took, its loads and warm-ups, and how it stopped. `WarmPool` keeps the variants
loaded, as many at once as memory allows (`pool.warm_capacity`), freeing the one used least
recently when another must load. `track_result` turns a track into the variant's summary
entry, summarized over all its outcomes by the evaluation graph's own evaluator code.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from evaluators.latency import decoded_in_full, throughput
from evaluators.memory import MemorySummary
from graphs.evaluation import CaseOutcome, outcomes_summary
from quantgate.evaluate.scheduler._pool import VariantWorker, WarmCapacity, make_worker
from quantgate.evaluate.scheduler._variant import VariantJob, VariantRun, variant_run
from quantgate.evaluate.scheduler._warm import Warmed, WorkerEnd
from quantgate.rundir._build import planned_metadata, variant_entry
from quantgate.rundir._store import RunStore
from quantgate.rundir._summary import Placement, SequentialEntry, VariantEntry, VariantMetadata

__all__ = ["MakeWorker", "Stopped", "Track", "WarmPool", "track_result"]

Stopped = Literal["settled", "budget", "cases"]
MakeWorker = Callable[[VariantJob, RunStore], VariantWorker]
"""Where a variant is kept warm: a worker process here (`make_worker`), a Ray actor on a node, ..."""


@dataclass(kw_only=True)
class Track:
    """One variant in a run in rounds.

    Attributes:
        job: Its job (the run's cases, in run order).
        is_reference: It is the run's reference.
        outcomes: Its outcomes by case id, as the graph keeps them.
        resumed: How many of them were read back from a resumed run's records.
        cached: Case ids whose records came from the reference cache.
        cached_entry: The cached run's entry of the reference (its memory and load figures,
            used when the reference never loads in this run).
        warmed: Each time it was loaded in this run, and what that took.
        ends: Each worker life's memory figures.
        metadata: Its line of variants.json once it was loaded (in this run, or before a resume).
        wall_s: Summed wall time of its rounds in this run (first case start to last end).
        case_s: Seconds per case in its last round, with the round's overhead (budget planning).
        settled: "pass" or "fail" once its accuracy gates are settled.
        stopped: Why it stopped before the run's last case (None: it went on to the end).
        error: Why it could not be evaluated.
        placed: Its summary entry is written.
        placement: Where its worker keeps it warm (its last worker's, after a restart).
    """

    job: VariantJob
    is_reference: bool
    outcomes: dict[str, CaseOutcome] = field(default_factory=dict)
    resumed: int = 0
    cached: set[str] = field(default_factory=set)
    cached_entry: VariantEntry | None = None
    warmed: list[Warmed] = field(default_factory=list)
    ends: list[WorkerEnd] = field(default_factory=list)
    wall_s: float = 0.0
    new_tokens: list[int | None] = field(default_factory=list)
    case_s: float | None = None
    metadata: VariantMetadata | None = None
    settled: Literal["pass", "fail"] | None = None
    stopped: Stopped | None = None
    error: str | None = None
    placed: bool = False
    placement: Placement = field(default_factory=lambda: Placement(executor="local"))

    @property
    def name(self) -> str:
        """The variant's name."""
        return self.job.variant.name

    @property
    def open(self) -> bool:
        """Still evaluated in the next round (not settled, stopped or failed)."""
        return self.settled is None and self.stopped is None and self.error is None

    def lacking(self, case_ids: list[str]) -> list[str]:
        """The cases of `case_ids` it has no outcome of, in their order."""
        return [case_id for case_id in case_ids if case_id not in self.outcomes]

    def ordered(self) -> list[CaseOutcome]:
        """Its outcomes in run order."""
        return [self.outcomes[c.id] for c in self.job.cases if c.id in self.outcomes]


class WarmPool:
    """The variants kept loaded, at most as many at once on each machine as `capacity` says (there,
    the least recently used freed first)."""

    def __init__(
        self,
        store: RunStore,
        capacity: WarmCapacity,
        on_load: Callable[[Track], None],
        make: MakeWorker = make_worker,
    ) -> None:
        self.store = store
        self.make = make
        self.capacity = capacity
        self.on_load = on_load
        self._workers: OrderedDict[str, tuple[Track, VariantWorker]] = OrderedDict()

    def worker(self, track: Track) -> VariantWorker:
        """The track's worker, loaded and warmed up if it is not (raises BackendError)."""
        if track.name in self._workers:
            self._workers.move_to_end(track.name)
            return self._workers[track.name][1]
        machine = self.capacity.machine_of.get(track.name)
        while beside := [
            t for t, _ in self._workers.values() if self.capacity.machine_of.get(t.name) == machine
        ]:
            if len(beside) < self.capacity.of(track.name):
                break
            self.release(beside[0])
        worker = self.make(track.job, self.store)
        warmed = worker.start()
        track.placement = worker.placement
        track.warmed.append(warmed)
        track.metadata = warmed.metadata
        self._workers[track.name] = (track, worker)
        self.on_load(track)
        return worker

    def holds(self, track: Track) -> bool:
        """The track's variant is loaded (its worker warm)."""
        return track.name in self._workers

    def release(self, track: Track) -> None:
        """Free the track's model, keeping its memory figures (no-op when it is not loaded)."""
        found = self._workers.pop(track.name, None)
        if found is not None:
            track.ends.append(found[1].end())
            track.placement = found[1].placement

    def drop(self, track: Track) -> None:
        """Stop the track's worker at once (it failed): no figures kept."""
        found = self._workers.pop(track.name, None)
        if found is not None:
            found[1].kill()
            track.placement = found[1].placement

    def kill_all(self) -> None:
        """Stop every worker at once (an interruption); what they wrote stays."""
        while self._workers:
            self._workers.popitem()[1][1].kill()


def _memory(track: Track) -> MemorySummary:
    """The memory figures of the worker life that peaked highest (the cached run's for a
    reference that never loaded here); none measured when there is neither."""
    ends = [end.memory for end in track.ends]
    if ends:
        return max(ends, key=lambda m: m.memory_mb if m.memory_mb is not None else -1.0)
    if track.cached_entry is not None:
        return MemorySummary.model_validate(
            track.cached_entry.model_dump(include=set(MemorySummary.model_fields))
        )
    return MemorySummary()


def _load_figures(track: Track) -> dict[str, Any]:
    first = track.warmed[0] if track.warmed else None
    cached = track.cached_entry
    if first is None and cached is not None:
        return {"load_s": cached.load_s, "cold_first_token_s": cached.cold_first_token_s, "loads": 0}
    return {
        "load_s": first.load_s if first else None,
        "cold_first_token_s": first.cold_first_token_s if first else None,
        "loads": len(track.warmed),
    }


def _all_decoded(outcomes: list[CaseOutcome]) -> bool:
    return all(decoded_in_full(o.extraction.attempts) for o in outcomes)


def track_result(track: Track, *, sequential: bool, timed_cases: frozenset[str] | None = None) -> VariantRun:
    """The variant's result: its entry summarized over all its outcomes, in run order (its latency
    figures over `timed_cases` only, when given: the run's latency sample)."""
    outcomes = track.ordered()
    wall = track.wall_s or None
    first = track.warmed[0] if track.warmed else None
    labeled = [o for o in outcomes if o.score.fields is not None]
    summary = outcomes_summary(
        outcomes,
        against_reference=not track.is_reference,
        memory=_memory(track),
        task=track.job.dataset.task,
        case_tasks=track.job.dataset.case_tasks,
        timed_cases=timed_cases,
    )
    figures = {
        **_load_figures(track),
        "concurrency": first.concurrency if first else None,
        "wall_s": wall,
        # rounds with verified cases read answers rather than write them: no decoding throughput
        "throughput_tokens_per_s": throughput(track.new_tokens, wall) if _all_decoded(outcomes) else None,
        "resumed_cases": track.resumed or None,
        "cached_cases": len(track.cached) or None,
        "sequential": SequentialEntry(
            settled=track.settled,
            paired_cases=len(labeled),
            cases=len(outcomes),
            stopped=track.stopped or "cases",
        )
        if sequential
        else None,
    }
    variant = track.job.variant
    entry = variant_entry(
        variant,
        summary,
        figures,
        is_reference=track.is_reference,
        quantization=variant.quantization or (first.quantization if first else None),
        cases=[case.id for case in track.job.cases],
        recorded=list(track.outcomes),
        stopped=track.stopped,
    )
    metadata = track.metadata or planned_metadata(variant)
    return variant_run(track.job, outcomes, entry, metadata)
