"""Format validity: is the output JSON, is it valid against the schema, and where not."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from evaluators.validation import MAX_DEPTH, SchemaValidator, too_deep

_FENCE_RE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.DOTALL)


@dataclass(frozen=True, kw_only=True)
class FormatProblem:
    """One reason an output is not valid.

    Attributes:
        path: Where in the output (`line_items[0].amount`), `<root>` for the whole of it.
        message: What is wrong.
    """

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True, kw_only=True)
class FormatResult:
    """Format validity of one output.

    Attributes:
        is_json: The output parsed as JSON (None when there was no output at all).
        schema_valid: The parsed output is valid against the schema (None when not JSON).
        parsed: The parsed value, when it parsed.
        errors: Every problem found, JSON syntax or schema.
    """

    is_json: bool | None
    schema_valid: bool | None
    parsed: Any = None
    errors: tuple[FormatProblem, ...] = ()

    @property
    def valid(self) -> bool:
        """Parsed and schema-valid."""
        return bool(self.is_json and self.schema_valid)


def error_path(parts: Iterable[str | int], prefix: str = "") -> str:
    """Render a JSON path as `prefix.items[0].amount` (`<root>` when empty and no prefix)."""
    path = prefix
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "<root>"


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # `1e999`: JSON syntax, but no number a double can hold
        raise ValueError(f"number out of range: {text[:24]}")
    return value


def loads_json(text: str) -> Any:
    """`json.loads`, with every way a text can fail to be JSON raised as `json.JSONDecodeError`.

    `json.loads` also raises `RecursionError` for nesting deeper than Python's recursion limit
    (a model that repeats `[`) and a plain `ValueError` for an integer of more than 4,300 digits;
    callers that handle `JSONDecodeError` then handle those too, as text that is not JSON. A
    number too large for a double (`1e999`, which Python reads as infinity and the validator
    cannot check) is refused the same way.
    """
    try:
        return json.loads(text, parse_float=_finite_float)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply to read", text, 0) from None
    except ValueError as exc:  # an integer longer than int()'s digit limit
        reason = str(exc).split(":")[0]
        raise json.JSONDecodeError(f"{reason[:1].lower()}{reason[1:]}", text, 0) from None


def parse_json_output(raw: str) -> tuple[Any, FormatProblem | None]:
    """Parse a model's text as JSON, tolerating surrounding whitespace and one code fence.

    Returns:
        The value and None, or None and the syntax error with its line and column.
    """
    text = raw.strip()
    fenced = _FENCE_RE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        return loads_json(text), None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        return None, FormatProblem(path="<root>", message=f"not valid JSON ({exc.msg} at {where})")


@dataclass(frozen=True, kw_only=True)
class FormatEvaluator:
    """Checks outputs against one schema; the validator is built once and reused.

    Patterns are matched with RE2 (`evaluators.validation`): a schema whose patterns are not RE2
    syntax raises `PatternError` here; `validation.check_schema` refuses it first.
    """

    schema: Mapping[str, Any]

    @cached_property
    def _validator(self) -> Any:
        return SchemaValidator(self.schema, format_checker=SchemaValidator.FORMAT_CHECKER)

    def schema_errors(self, value: Any, prefix: str = "") -> list[FormatProblem]:
        """Every schema violation of `value`, in document order; a value nested deeper than
        `MAX_DEPTH` is one error, found before the validator recurses into it."""
        if too_deep(value):
            deep = f"nested more than {MAX_DEPTH} levels deep"
            return [FormatProblem(path=prefix or "<root>", message=deep)]
        errors = sorted(self._validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
        return [FormatProblem(path=error_path(e.absolute_path, prefix), message=e.message) for e in errors]

    def __call__(self, *, outputs: str | Mapping[str, Any] | None) -> FormatResult:
        """Score the format of one output: raw model text, an already parsed record, or None."""
        if outputs is None:
            return FormatResult(
                is_json=None,
                schema_valid=None,
                errors=(FormatProblem(path="<root>", message="no output"),),
            )
        if isinstance(outputs, str):
            parsed, syntax_error = parse_json_output(outputs)
            if syntax_error is not None:
                return FormatResult(is_json=False, schema_valid=None, errors=(syntax_error,))
        else:
            parsed = outputs
        errors = self.schema_errors(parsed)
        return FormatResult(is_json=True, schema_valid=not errors, parsed=parsed, errors=tuple(errors))


def score_format(*, outputs: str | Mapping[str, Any] | None, schema: Mapping[str, Any]) -> FormatResult:
    """One-off format check; prefer a `FormatEvaluator` when checking many outputs."""
    return FormatEvaluator(schema=schema)(outputs=outputs)
