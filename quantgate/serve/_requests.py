"""What the HTTP API takes and answers: a run request, and a run's state.

Bodies are validated by pydantic (unknown keys refused, types strict), so a bad body gets 422
with the field named; the gates object is checked against `quantgate.inputs._gates.Gates`, the same
model a gates file goes through. Every field is bounded (`MAX_TEXT`, `MAX_VARIANTS`, finite
numbers), so no body can make a run's arguments or its state large.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from quantgate.inputs._gates import Gates

JobStatus = Literal["queued", "running", "complete", "failed", "cancelled"]
"""queued: waiting for the worker; running; complete: the run ended and was decided (whatever the
decision); failed: the run could not be done (the error says why); cancelled: stopped on request."""

MAX_TEXT = 1024
"""Characters in a dataset or variant string (a path, a name, a tag)."""
MAX_VARIANTS = 64
"""Entries in `variants`."""
MAX_TIMEOUT_S = 7 * 24 * 3600.0
"""The longest wall-clock limit a request may ask for (a week)."""


def _no_control_characters(value: str) -> str:
    if any(ord(character) < 0x20 or ord(character) == 0x7F for character in value):
        raise ValueError("control characters (such as NUL or a line break) are not allowed")
    return value


PlainText = Annotated[str, Field(min_length=1, max_length=MAX_TEXT), AfterValidator(_no_control_characters)]
"""A path, name or tag: 1 to MAX_TEXT characters, none of them a control character."""


def _finite(value: Any, where: str) -> None:
    """Refuse NaN and infinities anywhere in a JSON value (pydantic's `allow_inf_nan` only covers
    float fields, and the gates are a free-form object until `Gates` reads them)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: must be a finite number, not {value}")
    if isinstance(value, dict):
        for key, item in value.items():
            _finite(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _finite(item, f"{where}[{index}]")


class RunRequest(BaseModel):
    """`POST /runs`: what to evaluate, as `quantgate run` takes it."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)
    """Strict: `"limit": "3"`, `true` or `3.0` and `"report": "yes"` are refused, not converted."""

    dataset: PlainText = Field(
        default="contacts-events", description="A bundled dataset's name, or a path inside a root."
    )
    variants: list[PlainText] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_VARIANTS,
        description="Variants files and/or shorthands (llamacpp:PATH.gguf, ollama:TAG); paths inside a "
        "root. Left out (or null): the default ladder; an empty list is refused.",
    )
    limit: int | None = Field(default=None, ge=1, le=10**9, description="A fixed sample of N cases.")
    gates: dict[str, Any] | None = Field(default=None, description="Gate thresholds, as in a gates file.")
    token_fidelity: bool = True
    noise_floor_cases: int | None = Field(
        default=None,
        ge=0,
        le=10**6,
        description="Cases the reference answers again, one at a time: the runtime's noise floor (0: off; "
        "null: quantgate run's default).",
    )
    report: bool = True
    embeddings: bool = False
    timeout_s: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT_S,
        description="A wall-clock limit in seconds: the run is stopped as by cancel after it (the "
        "server's --run-timeout, when lower, still applies).",
    )

    @field_validator("gates")
    @classmethod
    def _known_gates(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            _finite(value, "gates")
            unset = [key for key, item in value.items() if item is None]
            if unset:  # TOML, the gates file the run reads, has no null
                raise ValueError(
                    f"gates.{unset[0]}: null is not a threshold; leave the key out for its default"
                )
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
    """`GET /runs/{id}`; also the job's `job.json`, from which a restarted server lists it."""

    id: str
    status: JobStatus
    request: RunRequest
    created_at: str
    started_at: str | None = None
    ended_at: str | None = None
    time_limit_s: float | None = Field(
        default=None, description="The wall-clock limit the run has (the request's or the server's)."
    )
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
