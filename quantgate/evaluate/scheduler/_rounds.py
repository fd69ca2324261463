"""A run in interleaved rounds: every variant on the same cases, the budget spent where it is open.

Every variant is loaded once and kept warm (`quantgate.evaluate.scheduler._tracks.WarmPool`: all at once
when memory allows, else as many as fit, reloading the others when their turn comes). A
round is the next `round_size` cases of the run's order that some candidate still needs. The
reference runs those of them it has no record of (none when the reference cache has them),
then each open candidate runs them, one variant at a time on each machine, so that no two
variants' timings overlap on one machine (candidates whose warm workers sit on different nodes
of a cluster run side by side: `quantgate.evaluate.scheduler._side_by_side`). After each round,
in a sequential run, each candidate's accuracy gates are judged
(`quantgate.evaluate.scheduler._stopping_rule`); a settled candidate is freed and its entry written, and
the next rounds go to the candidates still open (when every candidate is skipped, the reference
runs on alone, as in a run of the reference only). The rounds end when no candidate is open,
the cases run out, or the budget would be spent: a round starts only when its expected time
(each variant's last seconds per case) fits in what is left of `--budget`, which counts case
evaluation only (loads and warm-ups are measured apart, in `load_s` and the cold first token).
Inside a round the budget holds at case granularity: each variant is given the seconds left
(its worker, maybe another process, sets its own deadline from them), no case starts past
them, and once they are spent no further variant runs; every finished pair is kept (the
confidence sequence holds at any stopping time), so a candidate cut short has fewer pairs.

A plain variant whose calibrated twin (`Q2_K` beside `Q2_K+imat`,
`quantgate.inputs._calibration_twins`) is still open stays open once settled, so that the two are
compared on the same cases (`quantgate.decide._calibrations`); it is placed when no twin is open.

A fixed sample (`--limit`, `--all`) runs the same way, without judging: all its cases.

The load of the machine each variant's part of each round ran on (other processes' CPU share,
steal, load average: `evaluators.machine_load`; `_side_by_side.part_load`) is kept in summary.json's
`machine_load`, so a figure taken while other work ran beside the run says so.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from tqdm import tqdm

from graphs.extraction import GivenAnswer
from quantgate.backends import BackendError
from quantgate.evaluate._cache import ReferenceCache
from quantgate.evaluate._cpu_readings import read_cpu
from quantgate.evaluate._noise_floor_arm import NoiseFloorArm
from quantgate.evaluate._session import RunSession, record_run, record_skipped
from quantgate.evaluate.scheduler._pool import JudgeCapacity, VariantWorker
from quantgate.evaluate.scheduler._side_by_side import machine_groups, part_load, side_by_side
from quantgate.evaluate.scheduler._stopping_rule import paired_outcomes, settling_gates_status
from quantgate.evaluate.scheduler._tracks import MakeWorker, Stopped, Track, WarmPool, track_result
from quantgate.evaluate.scheduler._variant import VariantJob
from quantgate.evaluate.scheduler._verification import (
    answers_to_verify,
    latency_sample,
    reference_options,
    verification_missing,
)
from quantgate.inputs._calibration_twins import calibration_twins

__all__ = ["evaluate_in_rounds"]


class _Rounds:
    """The state of a run in rounds: its tracks, its warm workers, the time spent."""

    def __init__(self, session: RunSession, make: MakeWorker, capacity: JudgeCapacity) -> None:
        self.session = session
        self.options = session.options
        self.tracks = [self._track(v.name) for v in session.variants if v.name not in session.done]
        self.reference = next((t for t in self.tracks if t.is_reference), None) or self._done_reference()
        self.candidates = [t for t in self.tracks if not t.is_reference]
        self.twins: dict[str, list[str]] = {}
        """Each plain variant's calibrated twins: kept open while one of them is (`CalibrationTwin`)."""
        for twin in calibration_twins([t.job.variant for t in self.candidates]):
            self.twins.setdefault(twin.plain, []).append(twin.calibrated)
        warm = capacity([t.job.variant for t in self.tracks])
        self.pool = WarmPool(session.store, warm, on_load=self._loaded, make=make)
        self.cache = ReferenceCache.for_session(session)
        self.noise_floor = NoiseFloorArm(session)
        self._lock = threading.Lock()
        self.interrupted = False
        self.spent_s = session.summary.evaluation_s or 0.0
        self.budget_s = session.options.budget_s
        self.rounds = 0
        self.decode = latency_sample(session.cases, session.options)
        self.rounds_before = max((e.round for e in session.summary.machine_load or []), default=0)
        self.bars = {t.name: _bar(t, session) for t in self.tracks}
        if (held := warm.held([t.name for t in self.tracks])) < len(self.tracks):
            print(
                f"quantgate: memory holds {held} of the {len(self.tracks)} variants at once; the others "
                "load when their turn comes (each load is timed apart, in load_s)",
                file=sys.stderr,
            )

    def _track(self, name: str) -> Track:
        session = self.session
        variant = next(v for v in session.variants if v.name == name)
        prior = session.prior.get(name, ())
        job = VariantJob(
            variant=variant,
            dataset=session.dataset,
            cases=tuple(session.cases),
            run_dir=session.store.directory,
            reference_records=None if name == session.reference else {},
            options=session.options,
        )
        line = session.metadata.by_name().get(name)
        return Track(
            job=job,
            is_reference=name == session.reference,
            outcomes={o.case_id: o for o in prior},
            resumed=len(prior),
            metadata=line if line is not None and line.runtime is not None else None,
        )

    def _loaded(self, track: Track) -> None:
        """A variant just loaded: its line of variants.json (what serves it) is written at once."""
        if track.metadata is not None and len(track.warmed) == 1:
            self.session.place_metadata(track.metadata.model_copy(update={"placement": track.placement}))
            self.session.store.write_variants(self.session.metadata)

    def _done_reference(self) -> Track:
        """The reference of a resumed run that completed it: its records only, no worker."""
        track = self._track(self.session.reference)
        track.stopped = "cases"
        track.placed = True
        return track

    def run(self) -> None:
        """Load the candidates, then run rounds until none is open, the cases or the budget end (the
        reference loads when a round first needs a case the reference cache does not hold)."""
        self._judge()  # a resumed candidate may be settled by what it has already
        if self.pool.capacity.held(names := [t.name for t in self.tracks]) == len(names):  # all stay loaded
            for track in self.candidates:
                if track.open:
                    self._worker(track)
        while cases := self._next_round():
            self._round(cases)
        self._finish()

    def _worker(self, track: Track) -> VariantWorker | None:
        """The track's warm worker, loaded if it is not; None when it cannot be (it is skipped)."""
        try:
            return self.pool.worker(track)
        except BackendError as exc:
            self._fail(track, str(exc))
            return None

    def _open(self) -> list[Track]:
        """The variants the next round is for: the open candidates, or the reference alone in a run
        of the reference only, which a run whose every candidate failed (skipped) becomes: the
        reference still runs its cases, as it would without them."""
        if self.reference.error is not None:
            return []
        if any(t.error is None for t in self.candidates):
            return [t for t in self.candidates if t.open]
        return [self.reference] if self.reference.open else []

    def _pool_of_cases(self) -> list[str]:
        """The cases rounds can use: the run's, or only the reference's when it is done."""
        if self.reference.placed:
            return [c.id for c in self.session.cases if c.id in self.reference.outcomes]
        return [c.id for c in self.session.cases]

    def _next_round(self) -> list[str]:
        """The next round's cases, or [] when the rounds end (each open variant told why)."""
        open_tracks = self._open()
        if not open_tracks:
            return []
        needed = [c for c in self._pool_of_cases() if any(c not in t.outcomes for t in open_tracks)]
        cases = needed[: self.options.round_size]
        if not cases:
            return self._stop(open_tracks, "cases")
        left = self._left_s()
        if left is not None and left <= 0:
            return self._stop(open_tracks, "budget")
        if (
            self.budget_s is not None
            and self.rounds
            and self.spent_s + self._expected_s(cases) > self.budget_s
        ):
            return self._stop(open_tracks, "budget")
        return cases

    def _stop(self, tracks: list[Track], why: Stopped) -> list[str]:
        for track in tracks:
            track.stopped = why
        return []

    def _left_s(self) -> float | None:
        """Seconds of the budget left (None: no budget)."""
        return None if self.budget_s is None else self.budget_s - self.spent_s

    def _expected_s(self, cases: list[str]) -> float:
        """The time the round would take, at each variant's last measured rate (the reference's
        once, also when it runs alone)."""
        tracks = [self.reference, *(t for t in self._open() if t is not self.reference)]
        participants = [t for t in tracks if not t.placed and t.lacking(cases)]
        rates = [t.case_s for t in participants if t.case_s is not None]
        fallback = max(rates) if rates else 0.0

        def expected(group: list[Track]) -> float:
            return sum(len(t.lacking(cases)) * (fallback if t.case_s is None else t.case_s) for t in group)

        others = self._machines([t for t in participants if t is not self.reference])
        machines = max(map(expected, others), default=0.0)  # side by side: the longest one counts
        return expected([t for t in participants if t is self.reference]) + machines

    def _round(self, cases: list[str]) -> None:
        reference = self.reference
        if not reference.placed:  # the latency sample is decoded in this run, never served from the cache
            served = [c for c in cases if c not in self.decode]
            self.cache.serve(reference, served, self.session.store)
            verified = any(verification_missing(t.job.variant, self.options) is None for t in self._open())
            options = reference_options(reference.job.variant, cases, decode=self.decode, verified=verified)
            self.spent_s += self._evaluate(reference, cases, self._left_s(), model_options=options)
        if self.noise_floor.due and reference.error is None:
            self._noise_floor(cases)
        records = {
            c: o.extraction.record if o.extraction.valid else None
            for c, o in reference.outcomes.items()
            if c in cases
        }
        answers = answers_to_verify(reference.outcomes, cases, decode=self.decode)

        def part(track: Track, left: float | None) -> float:
            verifies = verification_missing(track.job.variant, self.options) is None
            given = answers if verifies else None
            return self._evaluate(track, cases, left, reference_records=records, answers=given)

        candidates = [t for t in self._open() if t is not reference] if reference.error is None else []
        self.spent_s += side_by_side(self._machines(candidates), part, self._left_s())
        self.rounds += 1
        self.session.summary.evaluation_s = self.spent_s
        self._judge()
        self.session.store.write_summary(self.session.summary)

    def _machines(self, tracks: list[Track]) -> list[list[Track]]:
        """The round's candidates by the machine they run on, when all are warm (their machines
        known, nothing loaded while they run); else one group, in turn."""
        with self._lock:
            warm = all(self.pool.holds(t) for t in tracks)
        return machine_groups(tracks) if warm else [tracks]

    def _evaluate(
        self,
        track: Track,
        cases: list[str],
        left: float | None,
        reference_records: dict | None = None,  # type: ignore[type-arg]
        answers: dict[str, list[GivenAnswer | str | None]] | None = None,
        model_options: dict[str, dict[str, Any]] | None = None,
    ) -> float:
        """The variant's part of a round, given the budget's seconds `left`; the seconds it took (0
        when nothing ran). Called from a thread per machine (`side_by_side`): what the tracks share
        (the pool, the session) is changed under the lock."""
        lacking = track.lacking(cases)
        if left is not None and left <= 0:  # the budget is spent: none of its cases starts
            return 0.0
        with self._lock:  # an interrupted run loads nothing more (another machine's thread may go on)
            worker = self._worker(track) if lacking and track.error is None and not self.interrupted else None
        if worker is None:  # nothing to run, or it could not be loaded (its load is not timed here)
            return 0.0
        bar = self.bars[track.name]
        started, before = time.perf_counter(), read_cpu()
        try:
            ran = worker.run(
                lacking, reference_records, lambda: _advance(bar), answers, seconds_left=left,
                model_options=model_options,
            )  # fmt: skip
        except BackendError as exc:  # its backend failed, or (interrupted) its worker was stopped
            with self._lock:
                if not self.interrupted:
                    self._fail(track, str(exc))
            return 0.0
        track.placement = worker.placement  # a worker started again elsewhere says so
        elapsed = time.perf_counter() - started
        track.case_s = elapsed / max(len(ran.outcomes), 1)
        with self._lock:  # the load of the machine it ran on (`part_load`)
            part = part_load(track, (before, read_cpu()), ran, round=self.rounds_before + self.rounds + 1)
            self.session.summary.machine_load = [*(self.session.summary.machine_load or []), part]
        track.wall_s += ran.wall_s or 0.0
        for outcome in ran.outcomes:
            track.outcomes[outcome.case_id] = outcome
            track.new_tokens.append(outcome.latency.output_tokens)
        return elapsed

    def _noise_floor(self, cases: list[str]) -> None:
        """The reference answers the first cases again, one at a time (`NoiseFloorArm`); its time is
        not the budget's. A reference that cannot load or dies here keeps its answers: the arm says
        why it has no figures, and a dead worker is loaded again when next needed."""
        reference = self.reference
        try:
            worker = self.pool.worker(reference)
        except BackendError as exc:
            self.session.summary.noise_floor_missing = f"not measured: {str(exc).splitlines()[0]}"
            return
        origins = {c: r.cached_from or self.cache.run_id for c, r in self.cache.records.items()
                   if c in reference.cached}  # fmt: skip
        try:
            self.noise_floor.measure(reference, cases, worker, origins)
        except BackendError:
            self.pool.drop(reference)
        if reference.placed:  # a resumed run's finished reference, loaded for the arm only
            self.pool.release(reference)

    def stop(self) -> None:
        """Stop every worker at once (an interruption): a part still running in another machine's
        thread then records no failure, and the run stays resumable."""
        with self._lock:
            self.interrupted = True
        self.pool.kill_all()

    def _judge(self) -> None:
        if not self.options.sequential:
            return
        scores = {
            c: {name: f.score for name, f in o.score.fields.fields.items()}
            for c, o in self.reference.outcomes.items()
            if o.score.fields is not None
        }
        open_tracks = [t for t in self.candidates if t.open]
        # the calibrated first, so that a plain twin sees whether they are still open
        for track in sorted(open_tracks, key=lambda t: t.job.variant.imatrix is None):
            paired = paired_outcomes(track.ordered(), scores)
            status = settling_gates_status(paired, self.options.gates, truncation=self.options.truncation)
            if status == "undecided":
                continue
            waiting = [t.name for t in self.candidates if t.name in self.twins.get(track.name, ()) and t.open]
            if waiting:  # settled, but its calibrated twins need it on the same cases
                shown = f"{status} after {len(paired)} paired cases; kept open beside {', '.join(waiting)}"
                self.bars[track.name].set_postfix_str(shown)
                continue
            track.settled, track.stopped = status, "settled"
            self.bars[track.name].set_postfix_str(f"{status} after {len(paired)} paired cases")
            self._place(track)

    def _fail(self, track: Track, error: str) -> None:
        track.error = error
        self.pool.drop(track)
        print(f"quantgate: skipping variant {track.name}: {error}")
        record_skipped(self.session, track.job, error, placement=track.placement)
        track.placed = True

    def _place(self, track: Track) -> None:
        """Free the track's model and write its entry (the reference's answers go to the cache)."""
        self.pool.release(track)
        self.bars[track.name].close()
        result = track_result(track, sequential=self.options.sequential, timed_cases=self.decode)
        if track.is_reference:
            self.cache.keep(track)
            self.cache.keep_entry(result.entry)
        record_run(self.session, result, placement=track.placement)
        track.placed = True

    def _finish(self) -> None:
        """Write the entries of the variants still unplaced (the reference last: it ran every case
        a candidate needed)."""
        if self.reference.open:  # beside candidates: stopped when the last open one did
            reasons = {t.stopped for t in self.candidates if t.settled is None and t.error is None}
            self.reference.stopped = "budget" if "budget" in reasons else "cases" if reasons else "settled"
        for track in [*self.candidates, self.reference]:
            if not track.placed and track.error is None:
                self._place(track)
        self.session.store.write_summary(self.session.summary)


def _advance(bar: tqdm) -> None:  # type: ignore[type-arg]
    bar.update(1)


def _bar(track: Track, session: RunSession) -> tqdm:  # type: ignore[type-arg]
    """A variant's cases so far (no total: a sequential run stops when the variant is settled)."""
    sequential = session.options.sequential
    return tqdm(
        total=None if sequential else len(session.cases),
        initial=len(track.outcomes),
        desc=track.name,
        unit="case",
        disable=not session.options.progress,
    )


def evaluate_in_rounds(session: RunSession, make: MakeWorker, capacity: JudgeCapacity) -> None:
    """Evaluate the variants not done yet in interleaved rounds, writing each one's entry as it
    settles or the rounds end (summary.json and variants.json written again each time).

    Args:
        session: The run being written.
        make: Where each variant is kept warm (`VariantExecutor.worker`: a worker process here,
            a Ray actor on a node).
        capacity: How many variants stay loaded at once on each machine
            (`VariantExecutor.warm_capacity`).

    Raises:
        KeyboardInterrupt: Ctrl-C or SIGTERM; every worker is stopped, the records stay.
    """
    rounds = _Rounds(session, make, capacity)
    try:
        rounds.run()
    except BaseException:
        rounds.stop()
        raise
    finally:
        for bar in rounds.bars.values():
            bar.close()
