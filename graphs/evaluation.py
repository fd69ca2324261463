"""The evaluation graph: one variant over a dataset's cases, in rounds, scored by evaluator nodes.

    START --> judge_round --next_round: Send per case of the next round--> run_case --+
                  ^                                                                   |
                  +-------------------------------------------------------------------+
              judge_round --next_round: stopped or done-->
                  score_accuracy, score_latency, score_agreement, score_memory --> aggregate --> END

`run_case` runs the extraction graph (the very graph production uses) on one case, scores
it at once (`score_case`) and hands the outcome to `on_record` (which streams it to disk), so
a run that stops midway keeps every case finished so far. Concurrency is bounded by the
`max_concurrency` of the invoke config. Cases run in rounds of `round_size` (one round of
all cases by default); before the first round and after each, `judge_round` asks the
context's `judge` whether to stop (a sequential gate settled, a budget spent), and
`next_round` sends the next round or goes on to the evaluator nodes. Past the context's
`deadline` a case is not started (and leaves no record), and no round follows. The outcomes
of cases already evaluated can be given with the input (a resumed run reads them back from
its records): those cases are not run again. The evaluator nodes each build one part of the
variant's summary from the per-case outcomes; `aggregate` merges them.
"""

from __future__ import annotations

import itertools
import math
import operator
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any, NotRequired, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from evaluators import CaseScore, CaseScorer, FieldAccuracy, aggregate, case_language, score_fields
from evaluators.format import FormatResult
from evaluators.latency import CaseLatency, case_latency, summarize_latency
from evaluators.memory import MemoryReading, summarize_memory
from evaluators.rates import share
from graphs.extraction import ExtractionContext, ExtractionResult
from graphs.extraction import graph as extraction_graph


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


@dataclass(kw_only=True)
class EvaluationContext:
    """What one variant's evaluation runs with.

    Attributes:
        extraction: The extraction graph's context (the variant's model is in it).
        scorer: Field and format scoring for the dataset's schema.
        reference_records: The reference variant's records by case id (None: this is the
            reference, or there is none), for agreement.
        on_record: Called with each finished case (from worker threads).
        memory: Returns the memory readings so far (called once, at the end).
        judge: Called after each round with the outcomes so far, in case order; a reason
            (a string) stops the evaluation before the next round, None goes on.
        deadline: A `time.perf_counter()` time after which no further case starts (the cases
            in flight finish); the evaluation then ends after the round.
        stop: Asked before each case starts; True (an interruption: Ctrl-C, SIGTERM) starts no
            further case, as past the deadline. Cases run on worker threads, which a signal
            does not reach.
    """

    extraction: ExtractionContext
    scorer: CaseScorer
    reference_records: Mapping[str, dict[str, Any] | None] | None = None
    on_record: Callable[[CaseOutcome], None] | None = None
    memory: Callable[[], MemoryReading] | None = None
    judge: Callable[[list[CaseOutcome]], str | None] | None = None
    deadline: float | None = None
    stop: Callable[[], bool] | None = None


class EvaluationInput(TypedDict):
    """The cases in run order, how many per round (absent or None: all in one), and the
    outcomes of those of them already evaluated (a resumed run's, read back from its records):
    their cases are not run again, and the evaluator nodes summarize them with the new ones."""

    cases: list[CaseInput]
    round_size: NotRequired[int | None]
    outcomes: NotRequired[Annotated[list[CaseOutcome], operator.add]]


class EvaluationState(EvaluationInput, total=False):
    """Per-case outcomes accumulate; each evaluator node fills its part of the summary.

    `case` is set only in the payload `next_round` sends to each `run_case` task.
    """

    case: CaseInput
    skipped: Annotated[list[str], operator.add]
    accuracy: dict[str, Any]
    latency: dict[str, Any]
    agreement: dict[str, Any]
    memory: dict[str, Any]
    summary: dict[str, Any]
    stopped: str | None


class EvaluationOutput(TypedDict):
    """The variant's summary, the per-case outcomes, and why it stopped before the last case."""

    summary: dict[str, Any]
    outcomes: list[CaseOutcome]
    stopped: NotRequired[str | None]


class CaseTask(TypedDict):
    """The payload sent to `run_case`."""

    case: CaseInput


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
        scorer: Format and field scoring for the dataset's schema.
        reference_records: The reference's normalized records by case id, for agreement
            (None: this is the reference).
    """
    lang = case_language(case["tags"])
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
        agreement = score_fields(
            outputs=result.record if result.valid else None,
            reference_outputs=reference_records[case["id"]] or {},
            schema=scorer.spec,
            options=scorer.options,
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


def run_case(state: EvaluationState, runtime: Runtime[EvaluationContext]) -> dict[str, Any]:
    """Extract one case with the variant's model, score it and pass the record on."""
    ctx, case = runtime.context, state["case"]  # the Send payload: a CaseTask
    out_of_time = ctx.deadline is not None and time.perf_counter() >= ctx.deadline
    if out_of_time or (ctx.stop is not None and ctx.stop()):
        return {"skipped": [case["id"]]}  # never started: no record
    lang = case_language(case["tags"])
    output = extraction_graph.invoke({"text": case["text"], "lang": lang}, context=ctx.extraction)
    outcome = score_case(
        case,
        ExtractionResult.from_output(output),
        scorer=ctx.scorer,
        reference_records=ctx.reference_records,
    )
    if ctx.on_record:
        ctx.on_record(outcome)
    return {"outcomes": [retained(outcome, keep_record=ctx.reference_records is None)]}


def _bare_fields(fields: FieldAccuracy | None) -> FieldAccuracy | None:
    if fields is None:
        return None
    return FieldAccuracy(
        fields={n: replace(f, expected=None, predicted=None) for n, f in fields.fields.items()}
    )


def retained(outcome: CaseOutcome, *, keep_record: bool = True) -> CaseOutcome:
    """What the graph state keeps of a finished case: only what the evaluator nodes read.

    All `run_case` tasks are one LangGraph superstep, so every case's state update stays in
    memory until the last case has run. The bulk (raw output, validation errors, parsed
    output, gold and predicted values per field) is dropped here; the full outcome has
    already gone to `on_record` (to disk). With `keep_record`, the normalized record of a
    valid output is kept: the reference's records serve the other variants' agreement.
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
            fields=_bare_fields(score.fields),
            format=FormatResult(is_json=fmt.is_json, schema_valid=fmt.schema_valid) if fmt else None,
        ),
        agreement=_bare_fields(outcome.agreement),
    )


def next_round(state: EvaluationState) -> list[Send] | list[str]:
    """One `run_case` task per case of the next round (the next cases in order without an
    outcome); the evaluators when stopped, out of time (a case skipped) or done."""
    skipped = state.get("skipped", [])
    size = state.get("round_size") or len(state["cases"])
    done = {o.case_id for o in state.get("outcomes", [])}
    waiting = (case for case in state["cases"] if case["id"] not in done)
    batch = [] if state.get("stopped") or skipped else list(itertools.islice(waiting, size))
    if not batch:
        return list(_EVALUATORS)
    return [Send("run_case", CaseTask(case=case)) for case in batch]


def judge_round(state: EvaluationState, runtime: Runtime[EvaluationContext]) -> dict[str, Any]:
    """Before the first round and after each: ask the context's judge, with the outcomes in case
    order, whether to stop (before the first, a resumed variant's outcomes may settle it)."""
    judge = runtime.context.judge
    if judge is None:
        return {}
    order = {case["id"]: i for i, case in enumerate(state["cases"])}
    outcomes = sorted(state.get("outcomes", []), key=lambda o: order[o.case_id])
    return {"stopped": judge(outcomes)}


def rounds_limit(cases: int, round_size: int | None) -> int:
    """The invoke config's `recursion_limit` for this many cases: two steps per round, the first
    judgement, and the end."""
    rounds = math.ceil(cases / round_size) if round_size else 1
    return 2 * rounds + 10


def score_accuracy(state: EvaluationState) -> dict[str, Any]:
    """Field accuracy (micro, macro, per field, per slice), format validity, errors."""
    outcomes = state.get("outcomes", [])
    summary = aggregate(o.score for o in outcomes)
    first_valid = [
        bool(o.extraction.attempts) and o.extraction.valid and len(o.extraction.attempts) == 1
        for o in outcomes
    ]
    errors: dict[str, int] = {}
    for o in outcomes:
        if o.error_kind:
            errors[o.error_kind] = errors.get(o.error_kind, 0) + 1
    return {
        "accuracy": {
            "cases": summary.cases,
            "field_accuracy": summary.field_accuracy,
            "field_accuracy_macro": summary.field_accuracy_macro,
            "format_validity": summary.format_validity,
            "first_attempt_validity": share(first_valid),
            "errors": sum(errors.values()),
            "errors_by_kind": errors,
            "truncated_cases": sum(o.extraction.truncated for o in outcomes),
            "retries": sum(o.extraction.retries for o in outcomes),
            "fields": summary.fields,
            "slices": summary.slices,
            "slice_cases": summary.slice_cases,
        }
    }


def score_latency(state: EvaluationState) -> dict[str, Any]:
    """TTFT and total-time percentiles, generation and prompt tokens/s."""
    return {"latency": summarize_latency(o.latency for o in state.get("outcomes", [])).model_dump()}


def score_agreement(state: EvaluationState, runtime: Runtime[EvaluationContext]) -> dict[str, Any]:
    """Agreement with the reference's outputs, overall and per field (no gold needed)."""
    against_reference = runtime.context.reference_records is not None
    return {"agreement": _agreement(state.get("outcomes", []), against_reference=against_reference)}


def _agreement(outcomes: list[CaseOutcome], *, against_reference: bool) -> dict[str, Any]:
    if not against_reference:
        return {"agreement_with_reference": None, "agreement_fields": {}}
    agreements = [o.agreement for o in outcomes if o.agreement is not None]
    pooled = aggregate(CaseScore(case_id="", fields=a) for a in agreements)
    return {
        "agreement_with_reference": pooled.field_accuracy,
        "agreement_fields": pooled.fields,
        "agreement_cases": len(agreements),
    }


def outcomes_summary(outcomes: list[CaseOutcome], *, against_reference: bool) -> dict[str, Any]:
    """What the accuracy, latency and agreement nodes make of `outcomes`: a variant's summary
    but its memory, for outcomes that several evaluations gathered (a variant whose cases
    were split between tasks: `quantgate.cluster`).

    Args:
        outcomes: The variant's case outcomes.
        against_reference: The variant is not the reference (its outcomes carry agreement).
    """
    state = EvaluationState(cases=[], outcomes=outcomes)
    parts = (
        score_accuracy(state)["accuracy"],
        score_latency(state)["latency"],
        _agreement(outcomes, against_reference=against_reference),
    )
    return {key: value for part in parts for key, value in part.items()}


def score_memory(state: EvaluationState, runtime: Runtime[EvaluationContext]) -> dict[str, Any]:
    """Peak RSS during inference, RSS growth from loading, file size."""
    reading = runtime.context.memory() if runtime.context.memory else MemoryReading()
    return {"memory": summarize_memory(reading).model_dump()}


def aggregate_summary(state: EvaluationState) -> dict[str, Any]:
    """Merge the evaluator nodes' parts into the variant's summary."""
    parts = (state.get("accuracy"), state.get("latency"), state.get("agreement"), state.get("memory"))
    return {"summary": {k: v for part in parts for k, v in (part or {}).items()}}


_EVALUATORS = ("score_accuracy", "score_latency", "score_agreement", "score_memory")


def build_evaluation_graph() -> Any:
    """Compile the evaluation graph (context: `EvaluationContext`)."""
    builder = StateGraph(
        EvaluationState,
        context_schema=EvaluationContext,
        input_schema=EvaluationInput,
        output_schema=EvaluationOutput,
    )
    builder.add_node("score_accuracy", score_accuracy)
    builder.add_node("run_case", run_case)
    builder.add_node("judge_round", judge_round)
    builder.add_node("score_latency", score_latency)
    builder.add_node("score_agreement", score_agreement)
    builder.add_node("score_memory", score_memory)
    builder.add_node("aggregate", aggregate_summary)
    builder.add_edge(START, "judge_round")
    builder.add_edge("run_case", "judge_round")
    builder.add_conditional_edges("judge_round", next_round, ["run_case", *_EVALUATORS])
    builder.add_edge(list(_EVALUATORS), "aggregate")
    builder.add_edge("aggregate", END)
    return builder.compile(name="evaluation")


graph = build_evaluation_graph()
