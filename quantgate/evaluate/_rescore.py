"""The cases a resumed run read back: each record rescored by the code that scored it.

A record keeps what the extraction graph returned for its case (the model's text, the
normalized record, the attempts and their timings, the error). Rebuilt into the graph's
result and scored again by `graphs.evaluation.score_case`, it gives the outcome the evaluator
nodes summarize, as when the case ran; it must score as it was recorded, or the scoring has
changed since and the run cannot be continued like for like.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaluators import CaseScorer
from graphs.evaluation import CaseOutcome, retained, score_case
from graphs.extraction import ExtractionResult
from graphs.outcomes import keeps_values
from quantgate.backends._extraction_context import case_input
from quantgate.evaluate._resume import ResumeError
from quantgate.inputs._dataset import Case, Dataset
from quantgate.rundir._files import RECORDS_FILE
from quantgate.rundir._lines import CaseRecord

__all__ = ["extraction_of", "outcomes_read_back", "prior_outcomes"]

_SCORE_TOLERANCE = 1e-9


def extraction_of(record: CaseRecord) -> ExtractionResult:
    """The extraction graph's result as a record keeps it."""
    return ExtractionResult(
        record=record.record,
        raw=record.raw,
        valid=record.valid,
        validation_errors=list(record.validation_errors),
        attempts=[dict(a) for a in record.attempt_timings],  # type: ignore[misc]
        truncated=record.truncated,
        input_tokens_dropped=record.input_tokens_dropped or 0,
        output_limit=record.error_kind == "output_limit",
        error=record.error,
        error_kind=record.error_kind if record.error else None,
        retries=record.retries or 0,
    )


def _mismatch(record: CaseRecord, outcome: CaseOutcome) -> str | None:
    """How the rescored outcome differs from what the record says (None: it does not)."""
    fields = outcome.score.fields
    now: dict[str, Any] = {
        "fields": {n: f.score for n, f in fields.fields.items()} if fields else {},
        "field_accuracy": fields.score if fields else None,
        "format_valid": outcome.score.format.valid if outcome.score.format else None,
        "agreement": outcome.agreement.score if outcome.agreement else None,
        "error_kind": outcome.error_kind,
    }
    then = {key: getattr(record, key) for key in now}
    for key, value in now.items():
        if not _same(value, then[key]):
            return f"{key} was {then[key]!r}, is now {value!r}"
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= _SCORE_TOLERANCE
    return bool(a == b)


def outcomes_read_back(
    records: Mapping[str, CaseRecord],
    cases: Sequence[Case],
    *,
    scorer: CaseScorer,
    reference_records: Mapping[str, dict[str, Any] | None] | None,
) -> list[CaseOutcome]:
    """The outcomes of a variant's recorded cases, rescored, in run order, as the graph keeps them.

    Args:
        records: The variant's records by case id.
        cases: The run's cases, in run order.
        scorer: The dataset's scorer.
        reference_records: The reference's normalized records by case id (None: the variant is
            the reference).

    Raises:
        ResumeError: A record does not score now as it was recorded.
    """
    outcomes = []
    for case in cases:
        record = records.get(case.id)
        if record is None:
            continue
        outcome = score_case(
            case_input(case), extraction_of(record), scorer=scorer, reference_records=reference_records
        )
        mismatch = _mismatch(record, outcome)
        if mismatch:
            raise ResumeError(
                f"{RECORDS_FILE}: case {case.id} of variant {record.variant} scores differently now "
                f"({mismatch}): the scoring changed since the run was written; start a new run"
            )
        outcomes.append(
            retained(outcome, keep_record=reference_records is None, keep_values=keeps_values(scorer.task))
        )
    return outcomes


def prior_outcomes(
    records: dict[str, dict[str, CaseRecord]],
    *,
    dataset: Dataset,
    cases: list[Case],
    reference: str,
    needed: Sequence[str],
) -> dict[str, tuple[CaseOutcome, ...]]:
    """The outcomes of the recorded cases of the reference and of each `needed` variant, rescored
    against the reference's records as when they ran (`outcomes_read_back`).

    Raises:
        ResumeError: A record does not score now as it was recorded.
    """
    scorer = dataset.scorer()
    own = outcomes_read_back(records.get(reference, {}), cases, scorer=scorer, reference_records=None)
    reference_records = {o.case_id: o.extraction.record if o.extraction.valid else None for o in own}
    prior = {reference: tuple(own)}
    for name in needed:
        if name != reference and records.get(name):
            prior[name] = tuple(
                outcomes_read_back(records[name], cases, scorer=scorer, reference_records=reference_records)
            )
    return prior
