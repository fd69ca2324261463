"""The JSON Schema validator: RE2 patterns (linear time), refused when not RE2 syntax; nesting bounded."""

from __future__ import annotations

import time

import pytest
import re2
from jsonschema.exceptions import SchemaError

from evaluators import FormatEvaluator
from evaluators.validation import (
    MAX_DEPTH,
    PatternError,
    SchemaValidator,
    check_schema,
    compile_pattern,
    too_deep,
)

CATASTROPHIC = "^(a+)+$"  # backtracking `re` takes seconds at 26 characters, minutes at 40


def _nested(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return value


def test_a_catastrophic_pattern_is_matched_by_re2_in_linear_time():
    assert isinstance(compile_pattern(CATASTROPHIC), re2._Regexp)
    evaluator = FormatEvaluator(schema={"type": "object", "properties": {"code": {"pattern": CATASTROPHIC}}})
    started = time.perf_counter()
    errors = evaluator.schema_errors({"code": "a" * 40 + "!"})
    assert time.perf_counter() - started < 1.0  # `re` took over 120 s here
    assert [str(e) for e in errors] == [f"code: '{'a' * 40}!' does not match '^(a+)+$'"]
    assert not evaluator.schema_errors({"code": "a" * 40})


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        (r"^\d{3}-\w+$", "123-ab_c", True),
        (r"^\d+$", "12\n", False),  # `$` is the end of the text, as in ECMA-262 (Python's `re` said yes)
        (r"^\d+$", "١٢", False),  # `\d` is ASCII, as in ECMA-262 (Python's `re` said yes)
        (r"[A-Z]{2,4}", "xxABx", True),  # searched, not anchored
        (r"^[^\s@]+@[^\s@]+\.[^\s@]+$", "a@b.co", True),
        (r"^\u00e9t\u00e9$", "été", True),  # ECMA-262's \uXXXX
        (r"^\\u00e9$", "\\u00e9", True),  # an escaped backslash before `u` is no \u escape
        (r"^\p{L}+$", "Größe", True),
    ],
)
def test_patterns_mean_what_they_mean_in_ecma_262(pattern, text, matches):
    assert SchemaValidator({"pattern": pattern}).is_valid(text) is matches


@pytest.mark.parametrize("pattern", [r"^(a)\1$", "^(?=a)", "(?<!x)a", "a{1001}"])
def test_a_pattern_re2_cannot_take_is_refused_naming_it(pattern):
    with pytest.raises(PatternError, match="is not RE2 syntax"):
        compile_pattern(pattern)
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}}
    with pytest.raises(SchemaError) as raised:
        check_schema(schema)
    assert raised.value.message.startswith(f"pattern {pattern!r} is not RE2 syntax")
    assert list(raised.value.absolute_path) == ["properties", "code", "pattern"]


def test_pattern_properties_and_format_regex_use_re2():
    with pytest.raises(SchemaError, match=r"pattern '\(\?=x\)' is not RE2 syntax"):
        check_schema({"type": "object", "patternProperties": {"(?=x)": {}}})
    validator = SchemaValidator({"patternProperties": {"^(a+)+$": {"type": "integer"}}})
    assert not validator.is_valid({"a" * 40: "no"})
    assert validator.is_valid({"a" * 40 + "!": "no"})
    regex = SchemaValidator({"format": "regex"}, format_checker=SchemaValidator.FORMAT_CHECKER)
    assert not regex.is_valid(r"(a)\1")
    assert regex.is_valid(r"^\d+$")


def test_a_schema_nested_too_deep_is_refused_before_anything_recurses():
    node: dict[str, object] = {"type": "string"}
    for _ in range(200):  # 120 levels overflowed Python's recursion limit in jsonschema
        node = {"type": "object", "properties": {"a": node}}
    with pytest.raises(SchemaError, match=f"nested more than {MAX_DEPTH} levels deep"):
        check_schema(node)


def test_too_deep_counts_objects_and_arrays_without_recursion():
    assert not too_deep("x")
    assert not too_deep(_nested(MAX_DEPTH))
    assert too_deep(_nested(MAX_DEPTH + 1))
    assert too_deep({"a": {"b": []}}, limit=2)
    assert too_deep(_nested(10_000))  # far past the recursion limit, and no RecursionError


def test_a_value_nested_too_deep_is_one_error_at_its_place():
    evaluator = FormatEvaluator(schema={"type": "object"})
    errors = evaluator.schema_errors({"extra": _nested(900)}, prefix="expected")
    assert [str(e) for e in errors] == [f"expected: nested more than {MAX_DEPTH} levels deep"]
