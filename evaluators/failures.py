"""How a variant's cases failed: first-attempt validity, errors by kind, cut inputs, retries.

Counted by the evaluation graph's accuracy node beside `evaluators.aggregate.DatasetScore`;
`quantgate.rundir._summary.VariantEntry` carries it as it is. Each count is None when not
counted (a variant that was skipped).
"""

from __future__ import annotations

from pydantic import Field

from evaluators.results import EvaluatorResult

__all__ = ["CaseFailures"]


class CaseFailures(EvaluatorResult):
    """Failure counts over a variant's cases.

    Attributes:
        first_attempt_validity: Share of cases whose first answer was valid (no repair needed).
        errors: Cases that failed (`graphs.evaluation.error_kind`: a backend error, an invalid or
            cut answer after the repairs).
        errors_by_kind: Those cases per error kind.
        truncated_cases: Cases whose text was cut to fit the context window.
        retries: Model calls repeated after retryable errors, over all cases.
    """

    first_attempt_validity: float | None = None
    errors: int | None = None
    errors_by_kind: dict[str, int] = Field(default_factory=dict)
    truncated_cases: int | None = None
    retries: int | None = None
