"""Typed load section of summary.json: each variant's load test, level by level.

`quantgate load` and `quantgate run --load` write it (`quantgate.loadtest`); the figures of a
level are `evaluators.loadtest.LoadStats`, and the requests themselves are in load.jsonl.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from evaluators.loadtest import LoadStats
from quantgate.rundir._files import LOAD_FORMAT_VERSION
from quantgate.rundir._lines import RunFileModel, VariantStatus

__all__ = ["Arrivals", "LoadLevelEntry", "LoadLevelSpec", "LoadSection", "LoadVariantEntry"]

Arrivals = Literal["closed", "poisson"]
"""How a level's requests arrive: closed (k threads, each sending when its last answer ended)
or poisson (open loop, at exponential gaps whatever the answers do)."""


class _LevelRun(RunFileModel):
    """How a level ran: the keys of its entry before its figures."""

    name: str
    concurrency: int
    instances: int
    rss_peak_mb: float | None
    arrivals: Arrivals = "closed"
    rate_per_s: float | None = Field(default=None, description="Offered rate of a Poisson level.")
    seed: int | None = Field(default=None, description="Seed of a Poisson level's arrival times.")


class LoadLevelEntry(LoadStats, _LevelRun):
    """One concurrency level of one variant's load test: how it ran, and `evaluators.loadtest.LoadStats`."""


class LoadVariantEntry(RunFileModel):
    """One variant in the summary's `load` section."""

    name: str
    backend: str
    status: VariantStatus = "ok"
    error: str | None = None
    instances_wanted: int | None = None
    instances: int | None = None
    capped: str | None = Field(default=None, description="Why fewer model copies were opened than wanted.")
    instance_model_mb: float | None = None
    slots: int | None = Field(
        default=None,
        description="Sequences one model copy decodes at once (embedded variants): its memory is "
        "one copy plus a KV cache of the runtime's n_ctx cells, which the slots share.",
    )
    rss_after_open_mb: float | None = None
    memory_process: str | None = None
    num_parallel: str | None = Field(
        default=None, description="OLLAMA_NUM_PARALLEL as set in quantgate's environment, verbatim."
    )
    runtime: dict[str, Any] = Field(default_factory=dict)
    warm_up_first_token_s: float | None = Field(
        default=None,
        description="First token of the warm-up prompt, sent to each model copy before the first "
        "level and not counted as a request; None when it failed or was not sent (format 1).",
    )
    levels: list[LoadLevelEntry] = Field(default_factory=list)


class LoadLevelSpec(RunFileModel):
    """A named level: closed (`concurrency` threads) or Poisson (`rate_per_s`, at most
    `concurrency` requests in flight)."""

    name: str
    concurrency: int
    arrivals: Arrivals = "closed"
    rate_per_s: float | None = None


class LoadSection(RunFileModel):
    """The summary's `load` section, written by `quantgate load` and `run --load`."""

    older_format_versions: ClassVar[tuple[int, ...]] = (1,)
    format_version: Literal[2] = LOAD_FORMAT_VERSION
    levels: list[LoadLevelSpec]
    requests_per_level: int | None
    duration_s_per_level: float | None
    max_tokens: int | None
    cases: int
    arrivals: Arrivals = "closed"
    seed: int | None = Field(default=None, description="Seed of the Poisson arrival times (None: closed).")
    ttft_target_s: float | None = Field(default=None, description="Time-to-first-token target of goodput.")
    itl_target_s: float | None = Field(default=None, description="Mean inter-token gap target of goodput.")
    variants: list[LoadVariantEntry] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _read_older(cls, value: Any) -> Any:
        """An older section inside a summary (which the file reader does not see) is read as this
        version: it is this version without the keys added since, which all have defaults."""
        if isinstance(value, dict) and value.get("format_version") in cls.older_format_versions:
            return {**value, "format_version": LOAD_FORMAT_VERSION}
        return value
