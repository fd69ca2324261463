"""The base of the evaluators' result types that a run file carries.

They are frozen pydantic models so that the run-directory models (`quantgate.rundir`) subclass
them, adding only what the run knows (the variant, the level, where the records are), instead
of copying their fields: a figure added here is in the run file too.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["EvaluatorResult", "KindFigures"]


class EvaluatorResult(BaseModel):
    """A typed, immutable result of an evaluator; unknown keys are refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class KindFigures(EvaluatorResult):
    """A variant's figures of its run's task kind (`evaluators.kinds`: a kind's `figures_model`),
    tagged with the kind's name: its sub-object `kind_figures` in a variant's entry of summary.json.

    Attributes:
        kind: The task kind the figures are of (summary.json's `dataset.task`).
    """

    kind: str
