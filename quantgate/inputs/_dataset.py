"""Datasets on disk: `schema.json` (or `task.json`, `quantgate.inputs._task_file`), `cases.jsonl`,
optional `examples.jsonl` and a card.

`check_dataset` lists every problem (file, line, field, message); `load_dataset`, which
everything else uses, applies the same checks and refuses a dataset with errors.
The format is documented in datasets/README.md.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from evaluators import CaseScorer, FieldSpec, MatchOptions, case_language, loads_json
from evaluators.errors import MissingInputError, UsageError
from evaluators.matchers import DEFAULT_OPTIONS
from evaluators.task_models import unique_tools
from evaluators.tasks import ExtractionTask, Task, Tool
from quantgate.inputs._case_tasks import CaseTasks
from quantgate.inputs._problems import Problem as Problem  # re-exported: readers import it from here
from quantgate.inputs._problems import is_repeat
from quantgate.inputs._problems import validation_problems as validation_problems
from quantgate.inputs._task_file import TASK_FILE, inlined_tools, read_record_schema, task_json
from quantgate.inputs._utf8 import utf8_encodable, utf8_lines

SCHEMA_FILE = "schema.json"
CASES_FILE = "cases.jsonl"
EXAMPLES_FILE = "examples.jsonl"
CARD_FILES = ("README.md", "SOURCE.md")
DATA_FILES = (SCHEMA_FILE, CASES_FILE, EXAMPLES_FILE, TASK_FILE)
"""The files whose bytes make a dataset what it is (its sha256)."""


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("empty text")
    return value


Text = Annotated[str, BeforeValidator(utf8_encodable), AfterValidator(_not_blank)]
"""A case's or document's text: anything but empty or blank, and encodable as UTF-8."""


class Case(BaseModel):
    """One line of `cases.jsonl` or `examples.jsonl`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, Field(min_length=1), BeforeValidator(utf8_encodable)]
    text: Text
    expected: Annotated[dict[str, Any] | None, BeforeValidator(utf8_encodable)] = None
    tags: tuple[Annotated[str, BeforeValidator(utf8_encodable)], ...] = ()
    tools: Annotated[tuple[Tool, ...] | None, BeforeValidator(utf8_encodable)] = None
    """The case's own tools (a tool-calling task's; docs/tasks.md), in task.json's format: they
    replace task.json's tools of the same name and join the others (`Dataset.case_tasks`)."""

    @field_validator("tools")
    @classmethod
    def _tool_names_unique(cls, tools: tuple[Tool, ...] | None) -> tuple[Tool, ...] | None:
        return None if tools is None else unique_tools(tools)

    @property
    def lang(self) -> str | None:
        """The language from a `lang:xx` tag, if any."""
        return case_language(self.tags)


class DatasetError(UsageError):
    """A dataset that does not pass its checks; `problems` lists all of them."""

    def __init__(self, path: Path, problems: list[Problem]) -> None:
        errors = [p for p in problems if p.severity == "error"]
        lines = "\n".join(f"  {p}" for p in errors)
        super().__init__(f"dataset {path} has {len(errors)} error(s):\n{lines}")
        self.path = path
        self.problems = problems


@dataclass(frozen=True, kw_only=True)
class Dataset:
    """A loaded, validated dataset.

    Attributes:
        name: Directory name.
        path: Directory.
        schema: The JSON Schema.
        spec: The schema as a field tree.
        cases: Scored cases, in file order.
        examples: Few-shot examples (never scored).
        card: The dataset card's text, if there is one.
        sha256: Hash of the data files (`DATA_FILES`: schema, cases, examples, task), identifying
            this exact data.
        warnings: Problems that did not stop loading (skipped lines, a missing card).
        task: What the cases ask (task.json; extraction without one). For the kinds other than
            extraction, `schema` and `spec` are derived from it (`evaluators.tasks`).
        left_out: Case ids a run leaves out of scoring that the dataset holds: the calibration cases
            of its calibrated variants (`quantgate.evaluate._calibration_holdout`); empty otherwise.
        case_tasks: When some case brings its own tools (`quantgate.inputs._case_tasks`): the
            task of every case and example by id (its own, or `task`), each case's record schema
            its task's, and `schema` offers every tool of the dataset (the schema variants are
            opened with). Empty otherwise: every case's task is `task`, its schema `schema`.
    """

    name: str
    path: Path
    schema: dict[str, Any]
    spec: FieldSpec
    cases: tuple[Case, ...]
    examples: tuple[Case, ...]
    card: str | None
    sha256: str
    warnings: tuple[Problem, ...] = ()
    task: Task = field(default_factory=ExtractionTask)
    left_out: tuple[str, ...] = ()
    case_tasks: Mapping[str, Task] = field(default_factory=dict)

    def task_of(self, case_id: str) -> Task:
        """The task of a case or example: its own when it brings tools, else the dataset's."""
        return self.case_tasks.get(case_id, self.task)

    def scorer(self, options: MatchOptions = DEFAULT_OPTIONS) -> CaseScorer:
        """The scorer of its cases: each against its record schema and task (`case_tasks`)."""
        return CaseScorer(schema=self.schema, options=options, task=self.task, case_tasks=self.case_tasks)

    @property
    def labeled(self) -> bool:
        """Whether any case has a gold record."""
        return any(c.expected is not None for c in self.cases)


def bundled_root() -> Path:
    """Where the bundled datasets are: in the installed package, or the source checkout."""
    package = Path(__file__).parents[1]
    installed = package / "bundled_datasets"
    return installed if installed.is_dir() else package.parent / "datasets"


def bundled_datasets() -> list[str]:
    """Names of the datasets shipped with quantgate."""
    root = bundled_root()
    return sorted(p.name for p in root.iterdir() if (p / SCHEMA_FILE).is_file() or (p / TASK_FILE).is_file())


def resolve_dataset(name_or_path: str | Path) -> Path:
    """A directory path as given, or the bundled dataset of that name."""
    path = Path(name_or_path)
    if path.is_dir() or path.exists():
        return path
    bundled = bundled_root() / str(name_or_path)
    if bundled.is_dir():
        return bundled
    known = ", ".join(bundled_datasets())
    raise MissingInputError(f"no dataset directory {path} and no bundled dataset of that name ({known})")


def _read_lines(file: Path, problems: list[Problem]) -> Iterator[tuple[int, Case]]:
    for lineno, line in utf8_lines(file, problems):
        case = _parse_case(file.name, lineno, line, problems)
        if case is not None:
            yield lineno, case


def _parse_case(name: str, lineno: int, line: str, problems: list[Problem]) -> Case | None:
    try:
        raw = loads_json(line)
    except json.JSONDecodeError as exc:
        problems.append(
            Problem(file=name, line=lineno, message=f"invalid JSON: {exc.msg} (column {exc.colno})")
        )
        return None
    if not isinstance(raw, dict):
        problems.append(Problem(file=name, line=lineno, message="a line must be a JSON object"))
        return None
    if isinstance(raw.get("tools"), list):
        tools = inlined_tools(raw["tools"], file=name, line=lineno, problems=problems)
        if tools is None:
            return None
        raw = {**raw, "tools": tools}
    try:
        return Case.model_validate(raw)
    except ValidationError as exc:
        problems.extend(validation_problems(exc, file=name, line=lineno))
        return None


def _read_cases(
    file: Path, tasks: CaseTasks | None, seen: dict[str, str], problems: list[Problem]
) -> list[tuple[int, Case]]:
    cases = []
    for lineno, case in _read_lines(file, problems):
        if is_repeat(
            seen, case.id, file=file.name, line=lineno, where=f"{file.name}:{lineno}", problems=problems
        ):
            continue
        check = tasks.check_of(case, file=file.name, line=lineno, problems=problems) if tasks else None
        if case.expected is not None and check is not None:
            for error in check(case.expected):
                problems.append(Problem(file=file.name, line=lineno, field=error.path, message=error.message))
        cases.append((lineno, case))
    return cases


def data_file_hashes(path: str | Path) -> dict[str, str]:
    """The sha256 of each data file of a dataset directory (schema, cases, examples) it holds."""
    files = [Path(path) / name for name in DATA_FILES]
    return {file.name: hashlib.sha256(file.read_bytes()).hexdigest() for file in files if file.is_file()}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    for name in DATA_FILES:
        file = path / name
        if file.is_file():
            digest.update(name.encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


def _skip_invalid_lines(lines: list[tuple[int, Case]], file: str, problems: list[Problem]) -> list[Case]:
    """Turn line-level errors of `file` into warnings and drop the cases they concern."""
    bad = set()
    for index, problem in enumerate(problems):
        if problem.file == file and problem.line is not None and problem.severity == "error":
            bad.add(problem.line)
            problems[index] = replace(
                problem, severity="warning", message=f"{problem.message} (line skipped)"
            )
    return [case for lineno, case in lines if lineno not in bad]


def _utf8_path(path: Path) -> bool:
    """Whether a path (bytes that are not UTF-8 read as lone surrogates) is UTF-8 text."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_dataset(
    path: str | Path, *, skip_invalid_cases: bool = False
) -> tuple[Dataset | None, list[Problem]]:
    """Validate a dataset directory and list every problem found.

    Args:
        path: The dataset directory.
        skip_invalid_cases: Leave out lines of cases.jsonl and examples.jsonl that have
            errors (reported as warnings) instead of refusing the dataset. Errors in the
            schema are always fatal.

    Returns:
        The dataset (None when it has errors) and all problems, errors and warnings.
    """
    root = Path(path)
    if not root.is_dir():
        return None, [Problem(file=str(root), message="not a directory")]
    if not _utf8_path(root):  # the run's files, all UTF-8, record its path and name
        message = "its path is not UTF-8 text, which the run's files cannot record; rename the directory"
        return None, [Problem(file=str(os.fsencode(root)), message=message)]
    problems: list[Problem] = []
    parsed = read_record_schema(root, problems)
    tasks = CaseTasks(parsed.task, parsed.schema) if parsed else None
    seen: dict[str, str] = {}
    case_lines: list[tuple[int, Case]] = []
    if (root / CASES_FILE).is_file():
        case_lines = _read_cases(root / CASES_FILE, tasks, seen, problems)
    else:
        problems.append(Problem(file=CASES_FILE, message="missing"))
    example_lines: list[tuple[int, Case]] = []
    if (root / EXAMPLES_FILE).is_file():
        example_lines = _read_cases(root / EXAMPLES_FILE, tasks, seen, problems)
    if skip_invalid_cases and parsed is not None:
        cases = _skip_invalid_lines(case_lines, CASES_FILE, problems)
        examples = _skip_invalid_lines(example_lines, EXAMPLES_FILE, problems)
    else:
        cases, examples = [c for _, c in case_lines], [c for _, c in example_lines]
    if not cases and (root / CASES_FILE).is_file():
        problems.append(Problem(file=CASES_FILE, message="no usable cases"))
    card_file = next((root / n for n in CARD_FILES if (root / n).is_file()), None)
    if card_file is None:
        problems.append(Problem(file="README.md", message="no dataset card (README.md)", severity="warning"))
    card = _read_card(card_file, problems) if card_file else None
    if parsed is None or tasks is None or any(p.severity == "error" for p in problems):
        return None, problems
    schema, case_tasks = tasks.of_dataset(c.id for c in (*cases, *examples))
    dataset = Dataset(
        name=root.resolve().name,
        path=root,
        schema=schema,
        spec=parsed.spec,
        cases=tuple(cases),
        examples=tuple(examples),
        card=card,
        sha256=_sha256(root),
        warnings=tuple(problems),
        task=parsed.task,
        case_tasks=case_tasks,
    )
    return dataset, problems


def _read_card(file: Path, problems: list[Problem]) -> str:
    """The dataset card's text. It is documentation, not data: bytes that are not UTF-8 are replaced
    (U+FFFD), with a warning naming the first, rather than refusing the dataset."""
    data = file.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = f"{exc.reason} at byte {exc.start + 1}"
        message = f"not UTF-8 ({where}); read with the bad bytes replaced"
        problems.append(Problem(file=file.name, message=message, severity="warning"))
        return data.decode("utf-8", errors="replace")


def load_dataset(name_or_path: str | Path, *, skip_invalid_cases: bool = False) -> Dataset:
    """Load a dataset by directory or bundled name, refusing one with errors.

    Args:
        name_or_path: A dataset directory, or the name of a bundled dataset.
        skip_invalid_cases: Leave out invalid case lines instead of refusing the dataset.

    Raises:
        MissingInputError: Neither a directory nor a bundled name (a FileNotFoundError).
        DatasetError: The dataset has errors; all of them are listed.
    """
    path = resolve_dataset(name_or_path)
    dataset, problems = check_dataset(path, skip_invalid_cases=skip_invalid_cases)
    if dataset is None:
        raise DatasetError(path, problems)
    return dataset


def _jsonl(cases: Iterable[Case]) -> str:
    return "".join(json.dumps(_line(c), ensure_ascii=False) + "\n" for c in cases)


def _line(case: Case) -> dict[str, Any]:
    """A case as its line holds it: `tools` only when it brings its own."""
    return case.model_dump(mode="json", exclude={"tools"} if case.tools is None else None)


def write_dataset(
    directory: str | Path,
    *,
    schema: Mapping[str, Any],
    cases: Iterable[Case],
    examples: Iterable[Case] = (),
    card: str | None = None,
    task: Task | None = None,
) -> Path:
    """Write a dataset directory in the standard format (the files are replaced).

    Args:
        directory: Where to write; created if missing.
        schema: The JSON Schema.
        cases: The scored cases.
        examples: Few-shot examples; examples.jsonl is written only when there are some.
        card: The README.md text.
        task: The task; a kind other than extraction writes task.json instead of schema.json
            (its record schema is derived from the task).

    Returns:
        The directory (an `OSError`, on a full disk, names the file it could not write).
    """
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    if task is None or task.record_schema() is None:
        _write_text(root / SCHEMA_FILE, json.dumps(schema, indent=2, ensure_ascii=False) + "\n")
    else:
        _write_text(root / TASK_FILE, task_json(task))
    _write_text(root / CASES_FILE, _jsonl(cases))
    example_text = _jsonl(examples)
    if example_text:
        _write_text(root / EXAMPLES_FILE, example_text)
    if card is not None:
        _write_text(root / CARD_FILES[0], card)
    return root


def _write_text(file: Path, text: str) -> None:
    """Write a file; an `OSError` names it (a write that fails, on a full disk, names none)."""
    try:
        file.write_text(text, encoding="utf-8")
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(file)
        raise
