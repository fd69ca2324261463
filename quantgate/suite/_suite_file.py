"""A suite file: several datasets (tasks) judged with the same variants in one run (`run --suite`).

    [[task]]
    name = "intents"              # unique; the task's directory under RUN_DIR/tasks/
    dataset = "banking77"         # a directory (relative to the suite file) or a bundled name
    gates = "gates-intents.toml"  # optional; else the command line's gates
    limit = 40                    # optional run settings: limit, all, max_cases, budget, examples

Every dataset and gates file is read and checked by `load_suite`, before any model loads; an error
names the suite file and the task. docs/suites.md describes the file and the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from evaluators.errors import UsageError
from quantgate.inputs._dataset import Dataset, bundled_datasets, bundled_root, load_dataset
from quantgate.inputs._gates import Gates, load_gates
from quantgate.inputs._tomlfile import read_toml

TaskName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
"""A task's name, also its directory's: letters, digits, `.`, `_`, `-`, at most 64 characters."""


class SuiteError(UsageError):
    """A suite file that cannot be used; the message names the file and the task."""


class SuiteTask(BaseModel):
    """One `[[task]]` of a suite file: a dataset, its gates and its run settings."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, use_attribute_docstrings=True)

    name: TaskName
    """The task's name, unique in the suite: its directory under RUN_DIR/tasks/."""
    dataset: Annotated[str, StringConstraints(min_length=1)]
    """A dataset directory (a relative path is relative to the suite file) or a bundled dataset's name."""
    gates: str | None = None
    """A gates file for this task (relative to the suite file); None: the command line's gates."""
    limit: Annotated[int, Field(ge=1)] | None = None
    """A fixed sample of this many cases (as `run --limit`)."""
    all: bool = False
    """A fixed sample of every case (as `run --all`)."""
    max_cases: Annotated[int, Field(ge=1)] | None = None
    """Sequential: at most this many cases (as `run --max-cases`)."""
    budget: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    """Sequential: minutes of case evaluation for this task (as `run --budget`)."""
    examples: Annotated[int, Field(ge=0)] | None = None
    """Few-shot examples taken from a dataset without examples.jsonl (as `run --examples`; 0: none)."""

    @model_validator(mode="after")
    def _one_sample(self) -> SuiteTask:
        if self.limit is not None and self.all:
            raise ValueError("limit and all are two fixed samples: give one")
        if (self.limit is not None or self.all) and (self.max_cases is not None or self.budget is not None):
            raise ValueError("max_cases and budget bound a sequential run; they do not go with limit or all")
        return self


class SuiteFile(BaseModel):
    """A suite file: its tasks, in the order they run."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    task: Annotated[list[SuiteTask], Field(min_length=1)]


@dataclass(frozen=True, kw_only=True)
class PlannedTask:
    """A suite's task with its dataset loaded and its gates resolved."""

    task: SuiteTask
    dataset: Dataset
    gates: Gates
    gates_file: Path | None


@dataclass(frozen=True, kw_only=True)
class Suite:
    """A suite file read and checked: its tasks in order, each dataset and gates file loaded."""

    path: Path
    tasks: tuple[PlannedTask, ...]


def _where(path: Path, raw: dict[str, Any], loc: tuple[int | str, ...]) -> str:
    """`suite.toml: task 'intents'` for a problem inside the second task, else the file."""
    if len(loc) >= 2 and loc[0] == "task" and isinstance(loc[1], int):
        tasks = raw.get("task")
        entry = tasks[loc[1]] if isinstance(tasks, list) and loc[1] < len(tasks) else None
        name = entry.get("name") if isinstance(entry, dict) else None
        label = f"task {name!r}" if isinstance(name, str) else f"task {loc[1] + 1}"
        rest = ".".join(map(str, loc[2:]))
        return f"{path}: {label}" + (f": {rest}" if rest else "")
    return f"{path}: {'.'.join(map(str, loc)) or '<root>'}"


def _parsed(path: Path) -> SuiteFile:
    raw = read_toml(path, what="suite file", error=SuiteError)
    try:
        suite = SuiteFile.model_validate(raw)
    except ValidationError as exc:
        lines = [f"{_where(path, raw, tuple(e['loc']))}: {e['msg']}" for e in exc.errors()]
        raise SuiteError("\n".join(lines)) from None
    seen: set[str] = set()
    for task in suite.task:
        if task.name in seen:
            raise SuiteError(f"{path}: task {task.name!r}: the name is given twice (each task needs its own)")
        seen.add(task.name)
    return suite


def _dataset_path(path: Path, task: SuiteTask) -> Path:
    """The task's dataset directory: relative to the suite file, else a bundled dataset."""
    given = path.parent / task.dataset
    if given.exists():
        return given
    if "/" not in task.dataset and (bundled_root() / task.dataset).is_dir():
        return bundled_root() / task.dataset
    raise SuiteError(
        f"{path}: task {task.name!r}: dataset {task.dataset!r} not found (no directory {given}; "
        f"bundled: {', '.join(bundled_datasets())})"
    )


def _planned(
    path: Path, task: SuiteTask, *, gates_file: str | None, overrides: dict[str, Any], skip_invalid: bool
) -> PlannedTask:
    where = f"{path}: task {task.name!r}"
    try:
        dataset = load_dataset(_dataset_path(path, task), skip_invalid_cases=skip_invalid)
    except UsageError as exc:
        raise SuiteError(exc if str(exc).startswith(where) else f"{where}: {exc}") from None
    own = path.parent / task.gates if task.gates is not None else None
    chosen = own if own is not None else (Path(gates_file) if gates_file is not None else None)
    try:
        gates = load_gates(chosen, overrides=overrides)
    except UsageError as exc:
        raise SuiteError(f"{where}: gates: {exc}") from None
    return PlannedTask(task=task, dataset=dataset, gates=gates, gates_file=chosen)


def load_suite(
    path: str | Path,
    *,
    gates_file: str | None = None,
    gate_overrides: dict[str, Any] | None = None,
    skip_invalid_cases: bool = False,
) -> Suite:
    """Read a suite file and load every task's dataset and gates, before any model loads.

    Args:
        path: The suite file (TOML).
        gates_file: The gates of a task without its own (`--gates`); None: the defaults.
        gate_overrides: Gate values from the command line, applied on top of every task's gates.
        skip_invalid_cases: Leave out invalid case lines instead of refusing a dataset.

    Raises:
        SuiteError: The file is missing or malformed, a name is repeated, a dataset is not found or
            has errors, a gates file cannot be used; the message names the file and the task.
    """
    path = Path(path)
    suite = _parsed(path)
    planned = tuple(
        _planned(
            path,
            task,
            gates_file=gates_file,
            overrides=gate_overrides or {},
            skip_invalid=skip_invalid_cases,
        )
        for task in suite.task
    )
    return Suite(path=path, tasks=planned)
