"""One production call as the online guard counts it, judged as the evaluation judged its cases.

Format validity is judged on the model's own last text, strictly (a run's `format_valid`); an
error is a backend failure or no valid record after the repairs (the run counts both); latency is
the call's model time summed over attempts; agreement is field agreement with a shadow
reference's record, scored by the scorer of the run's task kind (`evaluators.kinds.TASK_KINDS`: field
by field for extraction and classification, the whole call for tool calling, chrF for generation).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evaluators.case import CaseScorer
from evaluators.latency import case_latency
from graphs.evaluation import error_kind
from graphs.extraction import ExtractionContext, ExtractionResult

AGREEMENT = "agreement_with_reference"
METRICS = ("format_validity", "error_rate", "latency_s_p95", "memory_mb", "wrong_case_rate", AGREEMENT)
"""The metrics a guard can watch; agreement also per field, as `agreement_with_reference[<field>]`."""


@dataclass(frozen=True, kw_only=True)
class Observation:
    """One production call, as the guard counts it.

    Attributes:
        format_valid: The model's output parsed as JSON and matched the schema.
        error: The call ended without a valid record (a backend error, or invalid output
            after the repairs); the run counts both as errors.
        latency_s: Model time of the call, summed over attempts.
        memory_mb: RSS of the process holding the model, when read.
        agreement: Per-field agreement with a shadow reference's record (0..1 per field),
            when the call was shadowed.
        reviewed_wrong: A human review found at least one wrong field (None: not reviewed);
            the decision's cost break-even is a rate of these (`wrong_case_rate`).
    """

    format_valid: bool
    error: bool = False
    latency_s: float | None = None
    memory_mb: float | None = None
    agreement: Mapping[str, float] | None = None
    reviewed_wrong: bool | None = None

    @classmethod
    def from_extraction(
        cls,
        output: Mapping[str, Any],
        *,
        context: ExtractionContext,
        reference_record: Mapping[str, Any] | None = None,
        memory_mb: float | None = None,
    ) -> Observation:
        """Judge one output of the extraction graph as the evaluation judged its cases.

        Args:
            output: What the extraction graph returned (or a state holding its keys).
            context: The context it ran with (its schema is the one judged against).
            reference_record: The reference's record for the same text, when shadowed.
            memory_mb: RSS of the process holding the model, when read.
        """
        result = ExtractionResult.from_output(output)
        agreement = None
        if reference_record is not None:
            # the run's agreement: the scorer of the task's kind, with the run's default options
            scores = CaseScorer(schema=context.schema, task=context.task).fields(
                outputs=result.record if result.valid else None,
                reference_outputs=reference_record,
                lang=output.get("lang"),
            )
            agreement = {name: score.score for name, score in scores.fields.items()}
        return cls(
            format_valid=result.raw is not None and context.format(outputs=result.raw).valid,
            error=error_kind(result) is not None,
            latency_s=case_latency(result.attempts).total_s,
            memory_mb=memory_mb,
            agreement=agreement,
        )

    def values(self, metric: str) -> list[float] | None:
        """What this call contributes to a guard metric; None when it did not measure it."""
        if metric == "format_validity":
            return [float(self.format_valid)]
        if metric == "error_rate":
            return [float(self.error)]
        if metric == "latency_s_p95":
            return None if self.latency_s is None else [self.latency_s]
        if metric == "memory_mb":
            return None if self.memory_mb is None else [self.memory_mb]
        if metric == "wrong_case_rate":
            return None if self.reviewed_wrong is None else [float(self.reviewed_wrong)]
        if self.agreement is None:
            return None
        if metric == AGREEMENT:
            return list(self.agreement.values())
        field = metric[len(AGREEMENT) + 1 : -1]  # agreement_with_reference[<field>]
        return [self.agreement[field]] if field in self.agreement else None
