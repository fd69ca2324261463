"""What the HTTP API takes and answers: a run request, and a run's state.

Bodies are validated by pydantic (unknown keys refused), so a bad body gets 422 with the
field named; the gates object is checked against `quantgate.inputs.gates.Gates`, the same
model a gates file goes through.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from quantgate.inputs.gates import Gates

JobStatus = Literal["queued", "running", "complete", "failed", "cancelled"]
"""queued: waiting for the worker; running; complete: the run ended and was decided (whatever the
decision); failed: the run could not be done (the error says why); cancelled: stopped on request."""


class RunRequest(BaseModel):
    """`POST /runs`: what to evaluate, as `quantgate run` takes it."""

    model_config = ConfigDict(extra="forbid")

    dataset: str = Field(
        default="contacts-events",
        min_length=1,
        description="A bundled dataset's name, or a path inside a root.",
    )
    variants: list[str] | None = Field(
        default=None,
        description="Variants files and/or shorthands (llamacpp:PATH.gguf, ollama:TAG); paths inside a "
        "root. None: the default ladder.",
    )
    limit: int | None = Field(default=None, ge=1, description="A fixed sample of N cases (None: sequential).")
    gates: dict[str, Any] | None = Field(default=None, description="Gate thresholds, as in a gates file.")
    token_fidelity: bool = True
    report: bool = True
    embeddings: bool = False

    @field_validator("gates")
    @classmethod
    def _known_gates(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            Gates.model_validate(value)  # its errors name the key
        return value


class RunProgress(BaseModel):
    """What the run directory says so far (all None before it exists)."""

    run_dir: str | None = None
    run_status: str | None = Field(default=None, description="summary.json's status.")
    variants_done: int | None = None
    variants_total: int | None = None
    cases_recorded: int | None = Field(default=None, description="Lines in records.jsonl.")


class RunState(BaseModel):
    """`GET /runs/{id}`."""

    id: str
    status: JobStatus
    request: RunRequest
    created_at: str
    started_at: str | None = None
    ended_at: str | None = None
    exit_status: int | None = Field(default=None, description="`quantgate run`'s exit status.")
    outcome: str | None = Field(
        default=None, description="The decision: candidate_passes, keep_reference or none_passes."
    )
    progress: RunProgress = Field(default_factory=RunProgress)
    error: str | None = None


class Accepted(BaseModel):
    """`POST /runs` answers 202 with this."""

    id: str
    status: JobStatus
