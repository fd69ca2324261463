"""The evaluation graph: one variant over a dataset's cases, in rounds, scored by evaluator nodes.

    START --> judge_round --next_round: Send per case of the next round--> run_case --+
                  ^                                                                   |
                  +-------------------------------------------------------------------+
              judge_round --next_round: stopped or done--> each of EVALUATORS --> aggregate --> END

`run_case` runs the extraction graph (the very graph production uses) on one case, scores
it at once (`score_case`) and hands the outcome to `on_record` (which streams it to disk), so
a run that stops midway keeps every case finished so far. Concurrency is bounded by the
`max_concurrency` of the invoke config. Cases run in rounds of `round_size` (one round of
all cases by default); before the first round and after each, `judge_round` asks the
context's `judge` whether to stop (a sequential gate settled, a budget spent), and
`next_round` sends the next round or goes on to the evaluator nodes. Past the context's
`deadline` a case is not started (and leaves no record), and no round follows. The outcomes
of cases already evaluated can be given with the input (a resumed run reads them back from
its records): those cases are not run again. The evaluator nodes (`graphs.variant_summary.EVALUATORS`,
one node per entry) each build one typed part of the variant's summary from the per-case
outcomes; `aggregate` makes the `VariantSummary` of them.
"""

from __future__ import annotations

import itertools
import math
import operator
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired, Protocol, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from evaluators import CaseScorer, case_language
from evaluators.memory import MemoryReading
from evaluators.results import EvaluatorResult
from graphs.extraction import ExtractionContext, ExtractionResult, GivenAnswer
from graphs.extraction import graph as extraction_graph
from graphs.outcomes import CaseInput, CaseOutcome, error_kind, keeps_values, retained, score_case
from graphs.variant_summary import EVALUATORS, EvaluatorNode, Evidence, VariantSummary, outcomes_summary

__all__ = [
    "EVALUATORS",
    "CaseInput",
    "CaseOutcome",
    "EvaluationContext",
    "EvaluationGraph",
    "EvaluationInput",
    "EvaluationOutput",
    "EvaluationState",
    "VariantSummary",
    "build_evaluation_graph",
    "error_kind",
    "graph",
    "outcomes_summary",
    "retained",
    "rounds_limit",
    "score_case",
]


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
        answers: The reference's answers by case id, one per model call, for the variant to verify
            instead of writing its own (the extraction input's `answers`; used when the
            extraction context's `verify_kwarg` is set); a case without them decodes.
        model_options: Keyword options of each case's model calls, by case id (the extraction
            input's `model_options`: the reference is asked to keep its top log-probabilities).
    """

    extraction: ExtractionContext
    scorer: CaseScorer
    reference_records: Mapping[str, dict[str, Any] | None] | None = None
    on_record: Callable[[CaseOutcome], None] | None = None
    memory: Callable[[], MemoryReading] | None = None
    judge: Callable[[list[CaseOutcome]], str | None] | None = None
    deadline: float | None = None
    stop: Callable[[], bool] | None = None
    answers: Mapping[str, Sequence[GivenAnswer | str | None]] | None = None
    model_options: Mapping[str, Mapping[str, Any]] | None = None


class EvaluationInput(TypedDict):
    """The cases in run order, how many per round (absent or None: all in one), and the
    outcomes of those of them already evaluated (a resumed run's, read back from its records):
    their cases are not run again, and the evaluator nodes summarize them with the new ones."""

    cases: list[CaseInput]
    round_size: NotRequired[int | None]
    outcomes: NotRequired[Annotated[list[CaseOutcome], operator.add]]


class EvaluationState(EvaluationInput, total=False):
    """Per-case outcomes accumulate; each evaluator node adds its part of the summary to `parts`.

    `case` is set only in the payload `next_round` sends to each `run_case` task.
    """

    case: CaseInput
    skipped: Annotated[list[str], operator.add]
    parts: Annotated[list[EvaluatorResult], operator.add]
    summary: VariantSummary
    stopped: str | None


class EvaluationOutput(TypedDict):
    """The variant's summary, the per-case outcomes, and why it stopped before the last case."""

    summary: VariantSummary
    outcomes: list[CaseOutcome]
    stopped: NotRequired[str | None]


class CaseTask(TypedDict):
    """The payload sent to `run_case`."""

    case: CaseInput


def run_case(state: EvaluationState, runtime: Runtime[EvaluationContext]) -> dict[str, Any]:
    """Extract one case with the variant's model, score it and pass the record on."""
    ctx, case = runtime.context, state["case"]  # the Send payload: a CaseTask
    out_of_time = ctx.deadline is not None and time.perf_counter() >= ctx.deadline
    if out_of_time or (ctx.stop is not None and ctx.stop()):
        return {"skipped": [case["id"]]}  # never started: no record
    lang = case_language(case["tags"])
    answers = ctx.answers.get(case["id"]) if ctx.answers is not None else None
    options = dict(ctx.model_options.get(case["id"]) or {}) if ctx.model_options is not None else None
    own_task = ctx.scorer.case_tasks.get(case["id"])  # a case that brings its own tools
    output = extraction_graph.invoke(
        {"text": case["text"], "lang": lang, "answers": answers, "model_options": options},
        context=ctx.extraction if own_task is None else ctx.extraction.for_task(own_task),
    )
    outcome = score_case(
        case,
        ExtractionResult.from_output(output),
        scorer=ctx.scorer,
        reference_records=ctx.reference_records,
    )
    if ctx.on_record:
        ctx.on_record(outcome)
    kept = retained(
        outcome, keep_record=ctx.reference_records is None, keep_values=keeps_values(ctx.scorer.task)
    )
    return {"outcomes": [kept]}


def next_round(state: EvaluationState) -> list[Send] | list[str]:
    """One `run_case` task per case of the next round (the next cases in order without an
    outcome); the evaluators when stopped, out of time (a case skipped) or done."""
    skipped = state.get("skipped", [])
    size = state.get("round_size") or len(state["cases"])
    done = {o.case_id for o in state.get("outcomes", [])}
    waiting = (case for case in state["cases"] if case["id"] not in done)
    batch = [] if state.get("stopped") or skipped else list(itertools.islice(waiting, size))
    if not batch:
        return [node.name for node in EVALUATORS]
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


class _PartNode(Protocol):
    """A graph node that adds an evaluator's part of the summary."""

    def __call__(
        self, state: EvaluationState, *, runtime: Runtime[EvaluationContext]
    ) -> dict[str, list[EvaluatorResult]]: ...


def _evaluator_node(node: EvaluatorNode) -> _PartNode:
    """The graph node of an evaluator: its part of the summary from the state's outcomes."""

    def evaluate(
        state: EvaluationState, runtime: Runtime[EvaluationContext]
    ) -> dict[str, list[EvaluatorResult]]:
        ctx = runtime.context
        evidence = Evidence(
            outcomes=state.get("outcomes", []),
            against_reference=ctx.reference_records is not None,
            memory=ctx.memory,
            task=ctx.scorer.task,
            case_tasks=ctx.scorer.case_tasks,
        )
        return {"parts": [node.score(evidence)]}

    evaluate.__name__ = evaluate.__qualname__ = node.name
    return evaluate


def aggregate_summary(state: EvaluationState) -> dict[str, VariantSummary]:
    """The variant's summary of the evaluator nodes' parts."""
    return {"summary": VariantSummary.of(state.get("parts", []))}


EvaluationGraph = CompiledStateGraph[EvaluationState, EvaluationContext, EvaluationInput, EvaluationOutput]
"""The compiled evaluation graph's type."""


def build_evaluation_graph() -> EvaluationGraph:
    """Compile the evaluation graph (context: `EvaluationContext`): a node per entry of `EVALUATORS`."""
    builder = StateGraph(
        EvaluationState,
        context_schema=EvaluationContext,
        input_schema=EvaluationInput,
        output_schema=EvaluationOutput,
    )
    evaluators = [node.name for node in EVALUATORS]
    builder.add_node("run_case", run_case)
    builder.add_node("judge_round", judge_round)
    for node in EVALUATORS:
        builder.add_node(node.name, _evaluator_node(node))
    builder.add_node("aggregate", aggregate_summary)
    builder.add_edge(START, "judge_round")
    builder.add_edge("run_case", "judge_round")
    builder.add_conditional_edges("judge_round", next_round, ["run_case", *evaluators])
    builder.add_edge(evaluators, "aggregate")
    builder.add_edge("aggregate", END)
    return builder.compile(name="evaluation")


graph = build_evaluation_graph()
