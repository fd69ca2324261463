"""One case's outcome in an evaluation: the case as the evaluation graph takes it, its extraction
scored (`score_case`, the one definition of a case's outcome), and what the graph keeps of it
(`retained`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, TypedDict

from evaluators import CaseScore, CaseScorer, FieldAccuracy, case_language
from evaluators.format import FormatResult
from evaluators.latency import CaseLatency, case_latency
from evaluators.tasks import Task, kind_of
from graphs.extraction import ExtractionResult


class CaseInput(TypedDict):
    """One case as the graph takes it."""

    id: str
    text: str
    expected: dict[str, Any] | None
    tags: list[str]


@dataclass(frozen=True, kw_only=True)
class CaseOutcome:
    """Everything known about one case after extraction and scoring."""

    case_id: str
    extraction: ExtractionResult
    score: CaseScore
    latency: CaseLatency
    agreement: FieldAccuracy | None
    error_kind: str | None


def error_kind(result: ExtractionResult) -> str | None:
    """Why a case failed, as every figure counts errors: the backend's error kind,
    `output_limit` when the last answer stopped at the output token limit before it was valid,
    or `invalid_output` when no valid record came after the repairs; None when it did not fail."""
    if result.error:
        return result.error_kind or "backend_error"
    if result.valid:
        return None
    return "output_limit" if result.output_limit else "invalid_output"


def score_case(
    case: CaseInput,
    result: ExtractionResult,
    *,
    scorer: CaseScorer,
    reference_records: Mapping[str, dict[str, Any] | None] | None,
) -> CaseOutcome:
    """Score one extracted case: format validity of the model's text, fields of the pipeline's
    record against the gold, agreement with the reference's record, timings, the error kind.

    The one definition of a case's outcome: `run_case` scores each new case with it, and a
    resumed run rescores the records it reads back with it.

    Args:
        case: The case.
        result: What the extraction graph returned for it.
        scorer: Format and field scoring for the dataset's schema (the case's own, for a case
            that brings its own tools: `CaseScorer.for_case`).
        reference_records: The reference's normalized records by case id, for agreement
            (None: this is the reference).
    """
    lang = case_language(case["tags"])
    scorer = scorer.for_case(case["id"])
    score = scorer(
        case_id=case["id"],
        outputs=result.raw,  # format validity: the model's own text, strictly
        record=result.record if result.valid else None,  # fields: the pipeline's normalized record
        reference_outputs=case["expected"],
        tags=case["tags"],
        missing_reason=result.error or "no output",
    )
    agreement = None
    if reference_records is not None and reference_records.get(case["id"]) is not None:
        agreement = scorer.fields(
            outputs=result.record if result.valid else None,
            reference_outputs=reference_records[case["id"]] or {},
            lang=lang,
        )
    return CaseOutcome(
        case_id=case["id"],
        extraction=result,
        score=score,
        latency=case_latency(result.attempts),
        agreement=agreement,
        error_kind=error_kind(result),
    )


def _bare_fields(fields: FieldAccuracy | None, *, keep_values: bool = False) -> FieldAccuracy | None:
    if fields is None or keep_values:
        return fields
    return FieldAccuracy(
        fields={n: replace(f, expected=None, predicted=None) for n, f in fields.fields.items()}
    )


def keeps_values(task: Task) -> bool:
    """Whether the outcomes of `task` keep each field's values (`retained`'s `keep_values`): the
    figures of every kind but extraction read them (a classification's labels, a generation's texts,
    a tool-calling's calls)."""
    return kind_of(task).keeps_values


def retained(outcome: CaseOutcome, *, keep_record: bool, keep_values: bool) -> CaseOutcome:
    """What the graph state keeps of a finished case: only what the evaluator nodes read.

    All `run_case` tasks are one LangGraph superstep, so every case's state update stays in
    memory until the last case has run. The bulk (raw output, validation errors, parsed
    output, gold and predicted values per field) is dropped here; the full outcome has
    already gone to `on_record` (to disk). With `keep_record`, the normalized record of a
    valid output is kept: the reference's records serve the other variants' agreement. With
    `keep_values`, each field's gold and predicted values are kept, in the score and in the
    agreement: the task-level figures of a kind other than extraction read them (a
    classification's labels: its confusion matrix; a generation's texts and the reference's: chrF).
    Both are required: every path to the evaluator nodes (a case run, read back on resume, served
    from the reference cache) must keep the same, or its figures differ (`keeps_values`).
    """
    result, score = outcome.extraction, outcome.score
    fmt = score.format
    return replace(
        outcome,
        extraction=replace(
            result,
            raw=None,
            record=result.record if result.valid and keep_record else None,
            validation_errors=[],
            error=None,
        ),
        score=replace(
            score,
            fields=_bare_fields(score.fields, keep_values=keep_values),
            format=FormatResult(is_json=fmt.is_json, schema_valid=fmt.schema_valid) if fmt else None,
        ),
        agreement=_bare_fields(outcome.agreement, keep_values=keep_values),
    )
