"""What is wrong with an input file, located by file, line and field: `Problem`, and pydantic's
errors turned into problems (`validation_problems`). Datasets, task files, corpora and variant
files report through these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import ValidationError

from evaluators import error_path


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One thing wrong (or worth a warning) in a dataset, located as precisely as possible."""

    file: str
    message: str
    line: int | None = None
    field: str | None = None
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        what = f"{self.field}: {self.message}" if self.field else self.message
        return f"{where}: {what}"

    @classmethod
    def duplicate_id(cls, *, file: str, line: int, case_id: str, kept: str) -> Problem:
        """An id seen before in the same file; `kept` says which line counts ("first at ...")."""
        return cls(file=file, line=line, field="id", message=f"duplicate id {case_id!r} ({kept})")


def is_repeat(
    seen: dict[str, str], case_id: str, *, file: str, line: int, where: str, problems: list[Problem]
) -> bool:
    """Whether `case_id` is in `seen` (id -> where it was first): then a duplicate-id problem naming
    that place joins `problems`; else `seen` records `where` for it."""
    if case_id in seen:
        problems.append(
            Problem.duplicate_id(file=file, line=line, case_id=case_id, kept=f"first at {seen[case_id]}")
        )
        return True
    seen[case_id] = where
    return False


def validation_problems(exc: ValidationError, *, file: str, line: int | None) -> list[Problem]:
    """One `Problem` per pydantic error, located by file, line and field."""
    return [
        Problem(
            file=file,
            line=line,
            field=error_path(err["loc"]) if err["loc"] else None,
            message=err["msg"].removeprefix("Value error, "),
        )
        for err in exc.errors()
    ]
