"""The noise floor's arm: the reference against itself, on a recorded sample of cases.

Once the reference has answered the first round's cases (with its slots, its batches mixing
sequences; or from the reference cache), its warm worker answers the first `noise_floor_cases` of
them again, one case at a time, through the same extraction graph, and the two answers are
compared as a candidate's are with the reference's (`evaluators.noise_floor`). The rerun goes to
noise_floor.jsonl, never to records.jsonl; the figures to summary.json's `noise_floor`. Its time
(`noise_floor_s`) is kept out of the budget's case evaluation. Answers taken from the reference
cache were made by an earlier run of the same model file (the cache's key holds its sha256),
named in `first_from`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from evaluators.noise_floor import NoiseFloorCase, fields_changed, summarize_noise_floor
from graphs.evaluation import CaseOutcome
from quantgate.backends import BackendError
from quantgate.evaluate._options import variant_concurrency
from quantgate.evaluate._session import RunSession
from quantgate.evaluate.scheduler._pool import VariantWorker
from quantgate.evaluate.scheduler._tracks import Track
from quantgate.rundir._files import NOISE_FLOOR_FILE
from quantgate.rundir._jsonfile import RunWriteError
from quantgate.rundir._lines import NoiseFloorLine
from quantgate.rundir._summary import NoiseFloorEntry

__all__ = ["METHOD", "NoiseFloorArm"]

METHOD = (
    "the reference's answers to the first cases of the first round, answered again by its warm worker "
    "one case at a time (first_concurrency cases in flight the first time, 1 in the rerun), through the "
    "same extraction graph; the rerun scored against the first answers as a candidate is against the "
    "reference's"
)


def _record(outcome: CaseOutcome) -> dict[str, Any] | None:
    return outcome.extraction.record if outcome.extraction.valid else None


def _line(reference: str, case: NoiseFloorCase, origin: str | None, rerun: CaseOutcome) -> NoiseFloorLine:
    agreement = case.agreement
    return NoiseFloorLine(
        variant=reference,
        case_id=rerun.case_id,
        first_record=None if case.first is None else dict(case.first),
        first_from=origin,
        rerun_record=None if case.rerun is None else dict(case.rerun),
        rerun_raw=rerun.extraction.raw,
        rerun_error=rerun.extraction.error,
        identical=case.identical,
        agreement=agreement.score if agreement is not None else None,
        fields_changed=fields_changed(agreement) if agreement is not None else None,
    )


class NoiseFloorArm:
    """The run's noise floor: due until measured (a resumed run that measured it keeps it).

    Args:
        session: The run (its options say how many cases; its summary gets the figures).
    """

    def __init__(self, session: RunSession) -> None:
        self.session = session
        self.wanted = session.options.noise_floor_cases

    @property
    def due(self) -> bool:
        """The arm is on and has not measured yet."""
        return self.wanted > 0 and self.session.summary.noise_floor is None

    def measure(
        self, reference: Track, cases: Sequence[str], worker: VariantWorker, origins: Mapping[str, str]
    ) -> None:
        """Rerun the sample (the first `noise_floor_cases` of `cases` the reference answered) and put
        its figures into the summary, or why they are missing. `origins`: case id to the run that
        made the reference's answer, for the answers taken from the reference cache.

        Raises:
            BackendError: The reference's worker died during the rerun (the caller drops it).
            RunWriteError: noise_floor.jsonl could not be written.
        """
        summary = self.session.summary
        sample = [c for c in cases if c in reference.outcomes][: self.wanted]
        first = {c: _record(reference.outcomes[c]) for c in sample}
        if self.session.options.progress:
            what = f"{reference.name} answers {len(sample)} cases again, one at a time"
            print(f"quantgate: noise floor: {what}", file=sys.stderr)
        started = time.perf_counter()
        try:
            ran = worker.rerun(sample, first)
        except BackendError as exc:
            summary.noise_floor_missing = f"not measured: {str(exc).splitlines()[0]}"
            raise
        elapsed = time.perf_counter() - started
        by_case = {o.case_id: o for o in ran.outcomes}
        pairs = [
            (NoiseFloorCase(first=first[c], rerun=_record(by_case[c]), agreement=by_case[c].agreement), c)
            for c in sample
            if c in by_case
        ]
        self._write([_line(reference.name, case, origins.get(c), by_case[c]) for case, c in pairs])
        figures = summarize_noise_floor([case for case, _ in pairs])
        summary.noise_floor = NoiseFloorEntry.extending(
            figures,
            method=METHOD,
            records=NOISE_FLOOR_FILE,
            first_concurrency=variant_concurrency(self.session.options, reference.job.variant),
            rerun_concurrency=1,
            first_from=sorted({origins[c] for c in sample if c in origins}),
            noise_floor_s=elapsed,
        )
        summary.noise_floor_missing = None

    def _write(self, lines: Sequence[NoiseFloorLine]) -> None:
        """Write noise_floor.jsonl whole (a resumed run that measures again replaces it)."""
        path = self.session.store.directory / NOISE_FLOOR_FILE
        try:
            path.write_text("".join(line.model_dump_json() + "\n" for line in lines), encoding="utf-8")
        except OSError as exc:
            raise RunWriteError(path, exc) from exc
