"""Typed load section of summary.json: each variant's load test, level by level.

`quantgate load` and `quantgate run --load` write it (`quantgate.loadtest`); the figures of a
level are `evaluators.load.LoadStats`, and the requests themselves are in load.jsonl.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evaluators.load import LoadStats
from quantgate.rundir.files import LOAD_FORMAT_VERSION
from quantgate.rundir.lines import RunFileModel, VariantStatus

__all__ = ["LoadLevelEntry", "LoadLevelSpec", "LoadSection", "LoadVariantEntry"]


class _LevelRun(RunFileModel):
    """How a level ran: the keys of its entry before its figures."""

    name: str
    concurrency: int
    instances: int
    rss_peak_mb: float | None


class LoadLevelEntry(LoadStats, _LevelRun):
    """One concurrency level of one variant's load test: how it ran, and `evaluators.load.LoadStats`."""


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
    levels: list[LoadLevelEntry] = Field(default_factory=list)


class LoadLevelSpec(RunFileModel):
    """A named concurrency level."""

    name: str
    concurrency: int


class LoadSection(RunFileModel):
    """The summary's `load` section, written by `quantgate load` and `run --load`."""

    format_version: Literal[1] = LOAD_FORMAT_VERSION
    levels: list[LoadLevelSpec]
    requests_per_level: int | None
    duration_s_per_level: float | None
    max_tokens: int | None
    cases: int
    variants: list[LoadVariantEntry] = Field(default_factory=list)
