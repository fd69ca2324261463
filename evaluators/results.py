"""The base of the evaluators' result types that a run file carries.

They are frozen pydantic models so that the run-directory models (`quantgate.rundir`) subclass
them, adding only what the run knows (the variant, the level, where the records are), instead
of copying their fields: a figure added here is in the run file too.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["EvaluatorResult"]


class EvaluatorResult(BaseModel):
    """A typed, immutable result of an evaluator; unknown keys are refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")
