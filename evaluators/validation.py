"""The one JSON Schema validator quantgate uses: RE2 for `pattern`, and a bound on nesting.

JSON Schema's `pattern` and `patternProperties` are regular expressions run on the values a
user or a model writes. jsonschema runs them with Python's `re`, which backtracks: `^(a+)+$`
against 25 `a` and a `!` takes seconds, against 40 longer than a run. Here they run with RE2
(`google-re2`), whose time is linear in the text, whatever the pattern. RE2 has no
backreferences (`\\1`) and no lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`), and repeats at most
1,000 times (`a{1001}`): a schema with such a pattern is refused, naming it (`check_schema`),
never matched another way. ECMA-262's `\\uXXXX` is read as RE2's `\\x{XXXX}`; `\\d`, `\\w`,
classes, anchors and `{n,m}` mean what they mean in ECMA-262 (`\\d` and `\\w` are ASCII, `$`
is the end of the text, not before a final newline). A pattern is searched, not anchored.

Python's recursion limit is the other hazard: validating a schema nested a hundred levels deep
overflows it. `check_schema` refuses a schema nested deeper than `MAX_DEPTH` before anything
recurses, and `too_deep` lets callers refuse a value the same way.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from typing import Any

import re2
from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators
from jsonschema.exceptions import SchemaError

from evaluators.errors import UsageError

__all__ = ["MAX_DEPTH", "PatternError", "SchemaValidator", "check_schema", "compile_pattern", "too_deep"]

MAX_DEPTH = 64
"""The deepest nesting of objects and arrays in a schema or a gold record (each `{` or `[` inside
another is one level; a property inside `properties` is two: the map and its schema)."""

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print its own parse errors on stderr
_ECMA_UNICODE_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u([0-9A-Fa-f]{4})")


class PatternError(UsageError):
    """A pattern RE2 cannot take; the message names it and says why."""


@functools.lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> re2._Regexp[str]:
    """A JSON Schema pattern compiled with RE2 (linear-time matching), cached.

    Raises:
        PatternError: Not RE2 syntax (a backreference, lookaround, a repeat over 1,000, ...).
    """
    translated = _ECMA_UNICODE_ESCAPE.sub(r"\1\\x{\2}", pattern)
    try:
        return re2.compile(translated, _OPTIONS)
    except re2.error as exc:
        reason = b" ".join(a for a in exc.args if isinstance(a, bytes)).decode(errors="replace")
        raise PatternError(
            f"pattern {pattern!r} is not RE2 syntax ({reason or exc}); quantgate matches patterns "
            "with RE2, in linear time, which has no backreferences, lookaround or repeats over 1,000"
        ) from None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not compile_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        regex = compile_pattern(pattern)
        for key, value in instance.items():
            if regex.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _is_regex(instance: object) -> bool:
    if isinstance(instance, str):
        compile_pattern(instance)
    return True


def _format_checker() -> FormatChecker:
    """Draft 2020-12's format checker, with `regex` meaning RE2 syntax."""
    checker = FormatChecker(formats=())
    checker.checkers = dict(Draft202012Validator.FORMAT_CHECKER.checkers)
    checker.checks("regex", raises=PatternError)(_is_regex)
    return checker


SchemaValidator = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    validators={"pattern": _pattern, "patternProperties": _pattern_properties},
    format_checker=_format_checker(),
)
"""Draft 2020-12 with `pattern`, `patternProperties` and `format: regex` in RE2."""


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether objects and arrays nest more than `limit` levels in `value` (found without recursion)."""
    stack = [(value, 1)] if isinstance(value, Mapping | list) else []
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, Mapping) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, Mapping | list))
    return False


def check_schema(schema: Any) -> None:
    """Check a schema as quantgate uses it: nested at most `MAX_DEPTH` levels, valid against the
    draft 2020-12 metaschema, and every pattern (`pattern`, `patternProperties`) RE2 syntax.

    Raises:
        SchemaError: The first problem; `absolute_path` locates it in the schema.
    """
    if too_deep(schema):
        raise SchemaError(f"nested more than {MAX_DEPTH} levels deep (quantgate reads at most {MAX_DEPTH})")
    for error in Draft202012Validator(
        Draft202012Validator.META_SCHEMA, format_checker=SchemaValidator.FORMAT_CHECKER
    ).iter_errors(schema):
        if error.validator == "format" and isinstance(error.cause, PatternError):
            raise SchemaError(str(error.cause), path=error.absolute_path, cause=error.cause)
        raise SchemaError.create_from(error)
