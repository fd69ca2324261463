"""The evaluation graph's evaluator nodes: each makes one typed part of a variant's summary from
its case outcomes, and `EVALUATORS` is the one registry of them.

The graph adds a node per entry of `EVALUATORS`, routes to them when the cases are done, joins
them into `aggregate`, which builds the `VariantSummary` from their parts; `outcomes_summary`
runs the same entries outside the graph. Adding a per-variant figure: a field in a part's type
(in `evaluators/`), or a new part, its evaluator function, its entry here and its type among the
bases of `VariantSummary` (which `quantgate.rundir.summary.VariantEntry` subclasses).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Self, get_type_hints

from evaluators import CaseFailures, CaseScore, DatasetScore, ReferenceAgreement, aggregate
from evaluators.classification import (
    ClassificationSummary,
    reported_label_probabilities,
    summarize_labels,
    summarize_multi_label,
)
from evaluators.fields import FieldScore
from evaluators.generation import TEXT_FIELD, GenerationSummary, summarize_generation
from evaluators.latency import LatencySummary, summarize_latency
from evaluators.memory import MemoryReading, MemorySummary, summarize_memory
from evaluators.rates import share
from evaluators.results import EvaluatorResult
from evaluators.tasks import ClassificationTask, ExtractionTask, Task
from evaluators.tool_calls import ToolCallSummary, summarize_tool_calls, task_tools
from evaluators.verification import VerificationSummary, summarize_verification
from graphs.outcomes import CaseOutcome


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """What an evaluator node makes its part from.

    Attributes:
        outcomes: The variant's case outcomes (new and read back).
        against_reference: The variant is not the reference (its outcomes carry agreement).
        memory: Returns the memory readings (None: not measured here).
        task: The dataset's task (its kind's figures are made from the outcomes).
        timed_cases: The cases whose timings make the latency figures (the run's latency sample,
            decoded in full by every variant: `quantgate.evaluate.verification`); None: all.
    """

    outcomes: Sequence[CaseOutcome]
    against_reference: bool
    memory: Callable[[], MemoryReading] | None = None
    task: Task = field(default_factory=ExtractionTask)
    timed_cases: frozenset[str] | None = None


def score_accuracy(evidence: Evidence) -> DatasetScore:
    """Field accuracy (micro, macro, per field, per slice) and format validity."""
    return aggregate(o.score for o in evidence.outcomes)


def score_failures(evidence: Evidence) -> CaseFailures:
    """First-attempt validity, errors by kind, cases cut to fit, retries."""
    outcomes = evidence.outcomes
    first_valid = [
        bool(o.extraction.attempts) and o.extraction.valid and len(o.extraction.attempts) == 1
        for o in outcomes
    ]
    errors: dict[str, int] = {}
    for o in outcomes:
        if o.error_kind:
            errors[o.error_kind] = errors.get(o.error_kind, 0) + 1
    return CaseFailures(
        first_attempt_validity=share(first_valid),
        errors=sum(errors.values()),
        errors_by_kind=errors,
        truncated_cases=sum(o.extraction.truncated for o in outcomes),
        retries=sum(o.extraction.retries for o in outcomes),
    )


def score_latency(evidence: Evidence) -> LatencySummary:
    """TTFT and total-time percentiles, generation and prompt tokens/s."""
    timed = evidence.timed_cases
    return summarize_latency(o.latency for o in evidence.outcomes if timed is None or o.case_id in timed)


def score_verification(evidence: Evidence) -> VerificationSummary:
    """How the answers were obtained: verified against the reference's, or decoded."""
    return summarize_verification(o.extraction.attempts for o in evidence.outcomes)


def score_agreement(evidence: Evidence) -> ReferenceAgreement:
    """Agreement with the reference's outputs, overall and per field (no gold needed)."""
    if not evidence.against_reference:
        return ReferenceAgreement()
    agreements = [o.agreement for o in evidence.outcomes if o.agreement is not None]
    pooled = aggregate(CaseScore(case_id="", fields=a) for a in agreements)
    return ReferenceAgreement(
        agreement_with_reference=pooled.field_accuracy,
        agreement_fields=pooled.fields,
        agreement_cases=len(agreements),
    )


def score_memory(evidence: Evidence) -> MemorySummary:
    """Peak RSS during inference, RSS growth from loading, file size."""
    return summarize_memory(evidence.memory() if evidence.memory else MemoryReading())


def _values_kept(scored: Sequence[FieldScore]) -> bool:
    """Every labeled case kept its gold value (`graphs.outcomes.retained`'s `keep_values`): a case
    without it cannot be scored, so the kind's figures are not measured rather than wrong."""
    return all(s.expected is not None for s in scored)


def score_classification(evidence: Evidence) -> ClassificationSummary:
    """A classification's accuracy, macro-F1, per-class figures and confusion matrix (multi-label:
    subset accuracy, micro-F1, Hamming loss) from the labeled cases' label field; none for
    another kind, or when a labeled case's gold label was not kept. A case without a valid record
    has no answer."""
    task = evidence.task
    if not isinstance(task, ClassificationTask):
        return ClassificationSummary()
    labeled = [o for o in evidence.outcomes if o.score.fields is not None]
    scored = [o.score.fields.fields[task.field] for o in labeled if o.score.fields is not None]
    if not _values_kept(scored):
        return ClassificationSummary()
    gold = [s.expected for s in scored]
    predicted = [None if s.outcome == "no_output" else s.predicted for s in scored]
    if task.multi_label:
        return summarize_multi_label(labels=task.labels, gold=gold, predicted=predicted)
    last = [o.extraction.attempts[-1].get("reported") or {} if o.extraction.attempts else {} for o in labeled]
    probabilities = [reported_label_probabilities(r, task.labels) for r in last]
    return summarize_labels(labels=task.labels, gold=gold, predicted=predicted, probabilities=probabilities)


def _text_record(value: Any) -> dict[str, Any] | None:
    return None if value is None else {TEXT_FIELD: value}


def score_generation(evidence: Evidence) -> GenerationSummary:
    """chrF against the gold and the reference's texts, length ratios, empty texts, over the labeled
    cases (generation only; none for another kind). The texts are the `text` field's values: the
    variant's and the gold as its score has them, the reference's as its agreement has them (a case
    the reference did not answer has none); none when a labeled case's gold text was not kept."""
    if evidence.task.kind != "generation":
        return GenerationSummary()
    labeled = [o for o in evidence.outcomes if o.score.fields is not None]
    scored = [o.score.fields.fields[TEXT_FIELD] for o in labeled if o.score.fields is not None]
    if not _values_kept(scored):
        return GenerationSummary()
    reference = [o.agreement.fields[TEXT_FIELD].expected if o.agreement else None for o in labeled]
    return summarize_generation(
        outputs=[_text_record(s.predicted) for s in scored],
        reference_outputs=[_text_record(s.expected) for s in scored],
        reference_model_outputs=[_text_record(r) for r in reference] if evidence.against_reference else None,
    )


_CALL_FIELD = "call"
"""The one field of a tool-calling record: the call, or null for no call."""


def _calls_kept(score: FieldScore) -> bool:
    """The case's calls were kept (`keep_values`): no outcome that needs a call lacks it (a gold of
    no call is None, so a kept and a dropped "no call" look alike; the outcomes tell them apart)."""
    gold_needed = score.outcome in ("wrong", "missed")
    predicted_needed = score.outcome in ("wrong", "false_positive")
    return not (gold_needed and score.expected is None) and not (predicted_needed and score.predicted is None)


def score_tool_calls(evidence: Evidence) -> ToolCallSummary:
    """Tool selection, argument accuracy (overall and per argument), exact calls, abstention, false
    abstention and schema validity over the labeled cases (tool calling only; none for another kind,
    or when a case's calls were not kept). The calls are the `call` field's gold and predicted values
    as its score has them; a case without a valid record has no output."""
    task = evidence.task
    if task.kind != "tool_calling":
        return ToolCallSummary()
    scored = [o.score.fields.fields[_CALL_FIELD] for o in evidence.outcomes if o.score.fields is not None]
    if not all(_calls_kept(s) for s in scored):
        return ToolCallSummary()
    return summarize_tool_calls(
        outputs=[None if s.outcome == "no_output" else {_CALL_FIELD: s.predicted} for s in scored],
        reference_outputs=[{_CALL_FIELD: s.expected} for s in scored],
        tools=task_tools(task),
    )


@dataclass(frozen=True)
class EvaluatorNode:
    """One evaluator node of the evaluation graph: its function, named as the node.

    Attributes:
        score: Makes its part of the summary; its name is the node's, its return type the part's.
        of_outcomes: The part is made from the outcomes alone, so `outcomes_summary` makes it
            for outcomes gathered by several evaluations (memory is not: it is of one process).
    """

    score: Callable[[Evidence], EvaluatorResult]
    of_outcomes: bool = True

    @property
    def name(self) -> str:
        """The node's name in the graph: its function's."""
        return self.score.__name__

    @property
    def part(self) -> type[EvaluatorResult]:
        """The type of its part (the return type of `score`), one of the bases of `VariantSummary`."""
        kind: type[EvaluatorResult] = get_type_hints(self.score)["return"]
        return kind


EVALUATORS: tuple[EvaluatorNode, ...] = (
    EvaluatorNode(score_accuracy),
    EvaluatorNode(score_failures),
    EvaluatorNode(score_latency),
    EvaluatorNode(score_agreement),
    EvaluatorNode(score_memory, of_outcomes=False),
    EvaluatorNode(score_classification),
    EvaluatorNode(score_generation),
    EvaluatorNode(score_tool_calls),
    EvaluatorNode(score_verification),
)
"""The evaluator nodes, in the order of their parts' keys in the summary."""


class VariantSummary(
    VerificationSummary,
    ToolCallSummary,
    GenerationSummary,
    ClassificationSummary,
    MemorySummary,
    ReferenceAgreement,
    LatencySummary,
    CaseFailures,
    DatasetScore,
):
    """A variant's summary, as the evaluation graph returns it: one part per evaluator node (its
    bases are the parts' types: the keys of the last base come first)."""

    @classmethod
    def of(cls, parts: Iterable[EvaluatorResult]) -> Self:
        """The summary of the evaluator nodes' parts, one of each type among its bases.

        Raises:
            TypeError: A part's type is not among its bases, given twice, or missing.
        """
        by_type: dict[type[EvaluatorResult], EvaluatorResult] = {}
        for part in parts:
            kind = type(part)
            if kind not in cls.__bases__ or kind in by_type:
                raise TypeError(f"{kind.__name__}: not a part of {cls.__name__}, or given twice")
            by_type[kind] = part
        if missing := [base.__name__ for base in cls.__bases__ if base not in by_type]:
            raise TypeError(f"{cls.__name__}: no part {', '.join(missing)}")
        fields: dict[str, Any] = {key: value for part in by_type.values() for key, value in part}
        return cls.model_validate(fields)


def outcomes_summary(
    outcomes: Sequence[CaseOutcome],
    *,
    against_reference: bool,
    memory: MemorySummary,
    task: Task | None = None,
    timed_cases: frozenset[str] | None = None,
) -> VariantSummary:
    """What the evaluator nodes make of `outcomes`, with memory figures measured elsewhere: the
    summary of a variant whose outcomes several evaluations gathered (its cases split between
    tasks: `quantgate.cluster`; run in rounds by workers: `quantgate.evaluate.tracks`).

    Args:
        outcomes: The variant's case outcomes.
        against_reference: The variant is not the reference (its outcomes carry agreement).
        memory: Its memory figures (`MemorySummary()`: none measured).
        task: The dataset's task (None: extraction).
        timed_cases: The cases whose timings make the latency figures (None: all).
    """
    evidence = Evidence(
        outcomes=outcomes,
        against_reference=against_reference,
        task=task or ExtractionTask(),
        timed_cases=timed_cases,
    )
    parts = [node.score(evidence) for node in EVALUATORS if node.of_outcomes]
    return VariantSummary.of([*parts, memory])
