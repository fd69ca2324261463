"""The evaluation graph's evaluator nodes: each makes one typed part of a variant's summary from
its case outcomes, and `EVALUATORS` is the one registry of them.

The graph adds a node per entry of `EVALUATORS`, routes to them when the cases are done, joins
them into `aggregate`, which builds the `VariantSummary` from their parts; `outcomes_summary`
runs the same entries outside the graph. Adding a per-variant figure: a field in a part's type
(in `evaluators/`), or a new part, its evaluator function, its entry here and its type among the
bases of `VariantSummary` (which `quantgate.rundir._summary.VariantEntry` subclasses). A figure of
one task kind is its kind's (`evaluators.kinds`: its `figures_model` and `make_figures`), which
`score_kind` asks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self, get_type_hints

from evaluators import CaseFailures, CaseScore, DatasetScore, ReferenceAgreement, aggregate
from evaluators.kinds import KindFiguresPart, LabeledCase, kind_figures
from evaluators.latency import LatencySummary, summarize_latency
from evaluators.memory import MemoryReading, MemorySummary, summarize_memory
from evaluators.rates import share
from evaluators.results import EvaluatorResult
from evaluators.tasks import ExtractionTask, Task
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
        case_tasks: Each case's task by id when some case brings its own tools (the dataset's
            `case_tasks`): the kind's figures read each case against its task; empty: `task`.
        timed_cases: The cases whose timings make the latency figures (the run's latency sample,
            decoded in full by every variant: `quantgate.evaluate.scheduler._verification`); None: all.
    """

    outcomes: Sequence[CaseOutcome]
    against_reference: bool
    memory: Callable[[], MemoryReading] | None = None
    task: Task = field(default_factory=ExtractionTask)
    case_tasks: Mapping[str, Task] = field(default_factory=dict)
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


def _labeled_case(outcome: CaseOutcome, case_tasks: Mapping[str, Task]) -> LabeledCase | None:
    """What the kind's figures read of an outcome: its field scores, its agreement with the
    reference, its last attempt's reported numbers, its own task if any (None: the case has no gold)."""
    if outcome.score.fields is None:
        return None
    attempts = outcome.extraction.attempts
    return LabeledCase(
        fields=outcome.score.fields.fields,
        agreement=outcome.agreement.fields if outcome.agreement is not None else None,
        reported=(attempts[-1].get("reported") or {}) if attempts else {},
        tags=outcome.score.tags,
        task=case_tasks.get(outcome.case_id),
    )


def score_kind(evidence: Evidence) -> KindFiguresPart:
    """The figures of the run's task kind (`evaluators.kinds`: the kind's `make_figures`) over the
    labeled cases: a classification's label figures, a generation's chrF, tool calling's call
    figures; none for a kind without its own (extraction)."""
    cases = (_labeled_case(outcome, evidence.case_tasks) for outcome in evidence.outcomes)
    labeled = [case for case in cases if case is not None]
    figures = kind_figures(evidence.task, labeled, against_reference=evidence.against_reference)
    return KindFiguresPart(kind_figures=figures)


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
    EvaluatorNode(score_kind),
    EvaluatorNode(score_verification),
)
"""The evaluator nodes, in the order of their parts' keys in the summary."""


class VariantSummary(
    VerificationSummary,
    KindFiguresPart,
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
    case_tasks: Mapping[str, Task] | None = None,
    timed_cases: frozenset[str] | None = None,
) -> VariantSummary:
    """What the evaluator nodes make of `outcomes`, with memory figures measured elsewhere: the
    summary of a variant whose outcomes several evaluations gathered (its cases split between
    tasks: `quantgate.cluster`; run in rounds by workers: `quantgate.evaluate.scheduler._tracks`).

    Args:
        outcomes: The variant's case outcomes.
        against_reference: The variant is not the reference (its outcomes carry agreement).
        memory: Its memory figures (`MemorySummary()`: none measured).
        task: The dataset's task (None: extraction).
        case_tasks: Each case's task by id when some case brings its own tools (None: `task`).
        timed_cases: The cases whose timings make the latency figures (None: all).
    """
    evidence = Evidence(
        outcomes=outcomes,
        against_reference=against_reference,
        task=task or ExtractionTask(),
        case_tasks=case_tasks or {},
        timed_cases=timed_cases,
    )
    parts = [node.score(evidence) for node in EVALUATORS if node.of_outcomes]
    return VariantSummary.of([*parts, memory])
