"""Typed files of a suite's run directory (`quantgate run --suite`): suite.json, the plan, and
suite_decision.json, the decision over every task.

runs/<run-id>/
    suite.json             the suite: variants, and each task's dataset, gates, settings  (SuiteRun)
    suite_decision.json    per variant, per task: passed or not, the gates that failed    (SuiteDecision)
    suite_decision.md      the same, for people
    tasks/<task>/          each task's run directory, as `quantgate run` writes it for one dataset
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, Literal

from pydantic import Field

from quantgate.inputs._gates import Gates
from quantgate.rundir._decision import Outcome, VariantVerdict
from quantgate.rundir._jsonfile import read_model, write_model
from quantgate.rundir._lines import RunFileModel

SUITE_FILE = "suite.json"
SUITE_DECISION_JSON = "suite_decision.json"
SUITE_DECISION_MD = "suite_decision.md"
TASKS_DIR = "tasks"

SUITE_FORMAT_VERSION: Final[Literal[1]] = 1
"""Of suite.json."""
SUITE_DECISION_FORMAT_VERSION: Final[Literal[1]] = 1
"""Of suite_decision.json."""


class SuiteRunSettings(RunFileModel):
    """The run settings every task shares (those `run` takes as flags)."""

    concurrency: int | None = None
    max_repairs: int = 2
    token_fidelity: bool = True
    token_fidelity_cases: int | None = None
    reference_cache: str | None = Field(default=None, description="The reference cache's directory, if used.")
    skip_invalid_cases: bool = False


class SuiteTaskEntry(RunFileModel):
    """One task of the suite as it was planned."""

    name: str = Field(description="The task's name: its run directory is tasks/<name>/.")
    dataset: str = Field(description="The dataset's directory, as resolved from the suite file.")
    kind: str = Field(description="The dataset's task kind (extraction, classification, ...).")
    gates: Gates = Field(description="The gates the task is judged by.")
    gates_file: str | None = None
    limit: int | None = None
    all: bool = False
    max_cases: int | None = None
    budget: float | None = Field(default=None, description="Sequential: minutes of case evaluation.")
    examples: int | None = None


class SuiteRun(RunFileModel):
    """suite.json: written when the suite run starts, before any task runs."""

    format_version: Literal[1] = SUITE_FORMAT_VERSION
    run_id: str
    suite_file: str = Field(description="The suite file, as given.")
    reference: str
    variants: list[str] = Field(description="The variants, reference first, as every task runs them.")
    settings: SuiteRunSettings
    tasks: list[SuiteTaskEntry]


class TaskVerdict(RunFileModel):
    """One variant on one task, as the task's own decision judged it."""

    verdict: VariantVerdict | Literal["not_run"]
    passes: bool
    failed_gates: list[str] = Field(
        default_factory=list, description="The gates that did not pass: `gate status` (fail, inconclusive)."
    )


class SuiteVariantDecision(RunFileModel):
    """One variant over every task: it passes only if it passes each."""

    passes: bool
    is_reference: bool
    footprint_mb: float | None = Field(description="The largest of its tasks' footprints (MiB).")
    failing_tasks: list[str] = Field(description="The tasks it does not pass, in the suite's order.")
    tasks: dict[str, TaskVerdict]


class SuiteDecision(RunFileModel):
    """suite_decision.json: the suite's decision, from each task's decision.json."""

    format_version: Literal[1] = SUITE_DECISION_FORMAT_VERSION
    recommended: str | None = Field(description="The smallest variant passing every task; None if none.")
    outcome: Outcome
    exit_status: int
    reference: str
    tasks: list[str] = Field(description="The tasks, in the suite's order.")
    incomplete_tasks: list[str] = Field(
        default_factory=list, description="Tasks whose run was incomplete or missing when decided."
    )
    variants: dict[str, SuiteVariantDecision]
    decided_at: str


def read_suite(suite_dir: Path) -> SuiteRun:
    """A suite directory's suite.json."""
    return read_model(suite_dir / SUITE_FILE, SuiteRun)


def write_suite(suite_dir: Path, suite: SuiteRun) -> None:
    """Write suite.json atomically."""
    write_model(suite_dir / SUITE_FILE, suite)


def is_suite_dir(path: Path) -> bool:
    """Whether `path` is a suite's run directory (it holds suite.json)."""
    return (path / SUITE_FILE).is_file()
