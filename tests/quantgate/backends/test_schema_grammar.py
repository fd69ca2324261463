"""Constrained decoding enforces the schema: rewriting, unenforced keywords, and random walks.

The property test generates schemas that combine nullable types, formats, enums, bounds,
patterns, nested objects and arrays, samples outputs from the production grammar of each engine
(`grammar_walks.Walker`), and checks every output the grammar ended with the validator the
run scores with: each violation must be one `unenforced_keywords` named for that engine.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, ValidationError

from quantgate.backends._schema_grammar import (
    FORMAT_PATTERNS,
    UnenforcedKeyword,
    grammar_schema,
    unenforced_keywords,
)
from quantgate.inputs._dataset import bundled_root, load_dataset
from tests.quantgate.backends.grammar_walks import Walker

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")

NULLABLE_DATE = {"type": ["string", "null"], "format": "date"}


def _valid(schema: dict[str, Any], value: Any) -> bool:
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER).is_valid(value)


# --- the format patterns are exact where the validator checks ---------------------------------


def test_the_date_pattern_accepts_exactly_the_dates_the_validator_accepts():
    pattern = re.compile(FORMAT_PATTERNS["date"])
    years, months, days = (
        ("0000", "0001", "0004", "1900", "2000", "2023", "2024", "9999"),
        range(14),
        range(33),
    )
    for year, month, day in itertools.product(years, months, days):
        text = f"{year}-{month:02d}-{day:02d}"
        assert bool(pattern.fullmatch(text)) == _valid({"format": "date"}, text), text


@pytest.mark.parametrize("name", ["time", "date-time", "email", "ipv4", "uuid"])
def test_every_string_a_format_pattern_matches_passes_the_format_check(name):
    pattern = re.compile(FORMAT_PATTERNS[name])
    rng = random.Random(7)
    samples = {
        "time": lambda: (
            f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"
            + rng.choice(["Z", "+01:00", "-23:59", ".5Z"])
        ),
        "date-time": lambda: (
            (date(2000, 1, 1) + timedelta(days=rng.randrange(20000))).isoformat() + "T12:00:00Z"
        ),
        "email": lambda: "a.b@example.com",
        "ipv4": lambda: ".".join(str(rng.randrange(256)) for _ in range(4)),
        "uuid": lambda: "12345678-9abc-DEF0-1234-56789abcdef0",
    }[name]
    checked = [samples() for _ in range(200)]
    assert all(pattern.fullmatch(text) and _valid({"format": name}, text) for text in checked)
    if name in Draft202012Validator.FORMAT_CHECKER.checkers:  # what the pattern refuses, the check may too
        assert not _valid({"format": name}, "not-a-" + name)


# --- rewriting and naming what is not enforced --------------------------------------------------


def test_a_nullable_format_becomes_an_anyof_the_gbnf_converter_honours():
    prepared = grammar_schema({"type": "object", "properties": {"effective_date": NULLABLE_DATE}}, 20)
    field = prepared["properties"]["effective_date"]
    assert field == {
        "anyOf": [{"type": "string", "format": "date", "pattern": FORMAT_PATTERNS["date"]}, {"type": "null"}]
    }
    assert grammar_schema(prepared, 20) == prepared  # rewriting twice changes nothing (Ollama's double)


def test_llguidance_keeps_the_type_list_and_gets_the_exact_pattern():
    prepared = grammar_schema(NULLABLE_DATE, 20, "llguidance")
    assert prepared == {**NULLABLE_DATE, "pattern": FORMAT_PATTERNS["date"]}


def test_enum_values_of_another_type_are_dropped_with_the_type():
    prepared = grammar_schema({"type": ["string", "null"], "enum": ["EUR", 3, None]}, 20)
    assert prepared == {"enum": ["EUR", None]}


SCHEMA_WITH_GAPS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "age": {"type": ["integer", "null"], "minimum": 0, "maximum": 130},
        "code": {"type": "string", "pattern": "[A-Z]+"},
        "tags": {"type": "array", "items": {"type": "string", "format": "ipv6"}, "uniqueItems": True},
        "contact": {"oneOf": [{"type": "string", "format": "email"}, {"type": "null"}]},
        "when": NULLABLE_DATE,
    },
}


def test_gbnf_names_the_keywords_its_converter_drops_and_nothing_else():
    named = {(k.path, k.keyword) for k in unenforced_keywords(SCHEMA_WITH_GAPS, engine="gbnf")}
    assert named == {
        ("age", "minimum"),
        ("age", "maximum"),
        ("code", "pattern"),
        ("tags", "uniqueItems"),
        ("tags[]", "format: ipv6"),
        ("contact", "oneOf"),
    }


def test_llguidance_names_what_it_ignores():
    named = [k.keyword for k in unenforced_keywords(SCHEMA_WITH_GAPS, engine="llguidance")]
    assert named == ['Unimplemented keys: ["uniqueItems"]']


IMPORTED_GBNF_GAPS = {
    "bfcl-multiple": [("call.arguments.fee", "maximum")],
    "bfcl-parallel": [("calls[].arguments.population", "required")],
    "bfcl-parallel-multiple": [("calls[].arguments.fee", "maximum")],
    "bfcl-irrelevance": [
        ("call.arguments.user_responses[]", "minItems"),
        ("call.arguments.user_responses[]", "maxItems"),
    ],
}
"""What the GBNF converter leaves out of the BFCL sets' tools, imported as BFCL wrote them (the
sets written for quantgate are enforced whole; `datasets check` and a run name these)."""


def test_the_bundled_schemas_are_enforced_whole(bundled_dataset_dir):
    schema = load_dataset(bundled_dataset_dir).schema  # schema.json, or derived from task.json
    assert unenforced_keywords(schema, engine="llguidance") == ()
    gaps = [(k.path, k.keyword) for k in unenforced_keywords(schema, engine="gbnf")]
    assert gaps == IMPORTED_GBNF_GAPS.get(bundled_dataset_dir.name, [])


def test_an_annotation_only_format_is_not_named():
    assert unenforced_keywords({"type": "string", "format": "uri"}, engine="gbnf") == ()  # not checked here


# --- random walks through the real grammar -------------------------------------------------------


def _json_path(parts: Any) -> str:
    path = ""
    for part in parts:
        path += "[]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "<root>"


def _explained(error: ValidationError, named: tuple[UnenforcedKeyword, ...]) -> bool:
    """The violation is one of the named keywords (an anyOf fails only if no branch was otherwise valid)."""
    if error.validator in ("anyOf", "oneOf") and error.context:
        branches: dict[Any, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        if any(all(_explained(e, named) for e in errors) for errors in branches.values()):
            return True
    keyword = f"format: {error.validator_value}" if error.validator == "format" else str(error.validator)
    path = _json_path(error.absolute_path)
    return any(
        (k.path == path and k.keyword == keyword)
        or (k.path == "<schema>" and str(error.validator) in k.keyword)
        for k in named
    )


def _outputs(walker: Walker, schema: dict[str, Any], seed: int, walks: int) -> Iterator[str | None]:
    grammar = walker.grammar(schema)
    rng = random.Random(seed)
    for _ in range(walks):
        yield walker.walk(grammar, rng)


def test_the_issue_example_cannot_be_written_any_more(walker):
    """Dates written as date-times (`2012-10-15T00:00:00Z`) no longer fit a nullable `format: date`."""
    schema = {
        "type": "object",
        "properties": {"effective_date": NULLABLE_DATE},
        "required": ["effective_date"],
    }
    state = walker.checker.start(walker.grammar(schema))
    text = ' {"effective_date": "2012-10-15T00:00:00Z"}'
    tokens = walker.llama.tokenize(text.encode(), add_bos=False, special=False)
    accepted = 0
    for token in tokens:
        allowed = (
            state._allowed(token, 0.0) if walker.engine == "gbnf" else state._matcher.validate_tokens([token])
        )
        if not allowed:
            break
        state.accept(token)
        accepted += 1
    state.close()
    assert walker.llama.detokenize(tokens[:accepted]).decode().endswith('"2012-10-15')  # refused at the T


@pytest.mark.parametrize("name", ["contacts-events", "invoices", "long-documents", "tech-config"])
def test_walks_on_the_bundled_schemas_are_strictly_valid(walker, name):
    schema = json.loads((bundled_root() / name / "schema.json").read_text())
    outputs = [o for o in _outputs(walker, schema, seed=1, walks=6) if o is not None]
    assert len(outputs) == 6  # every walk ended
    for output in outputs:
        assert _valid(schema, json.loads(output)), output


# --- the property: generated schemas --------------------------------------------------------------

_FORMATS = [*sorted(FORMAT_PATTERNS), "ipv6", "json-pointer"]
_PATTERNS = ["^[A-Z]{3}$", "^[0-9]{2,4}$", "^(EUR|USD|GBP)$", "^[a-z]+-[0-9]+$"]


def _typed(kind: str, nullable: bool, keywords: dict[str, Any]) -> dict[str, Any]:
    return {"type": [kind, "null"] if nullable else kind, **keywords}


_string_keywords = st.one_of(
    st.just({}),
    st.builds(lambda f: {"format": f}, st.sampled_from(_FORMATS)),
    st.builds(lambda p: {"pattern": p}, st.sampled_from(_PATTERNS)),
    st.fixed_dictionaries({"minLength": st.integers(0, 3), "maxLength": st.integers(3, 8)}),
)
_number_keywords = st.fixed_dictionaries(
    {},
    optional={
        "minimum": st.integers(-5, 5),
        "maximum": st.integers(6, 50),
        "exclusiveMinimum": st.integers(-9, -6),
        "exclusiveMaximum": st.integers(51, 99),
        "multipleOf": st.sampled_from([2, 5, 0.5]),
    },
)
_leaves = st.one_of(
    st.builds(_typed, st.just("string"), st.booleans(), _string_keywords),
    st.builds(_typed, st.sampled_from(["integer", "number"]), st.booleans(), _number_keywords),
    st.builds(_typed, st.sampled_from(["boolean", "null"]), st.just(False), st.just({})),
    st.builds(
        lambda values, typed: (
            {"type": ["string", "integer", "null"], "enum": values} if typed else {"enum": values}
        ),
        st.lists(st.sampled_from(["a", "EUR", 1, 2, None]), min_size=1, max_size=4, unique=True),
        st.booleans(),
    ),
    st.builds(lambda value: {"const": value}, st.sampled_from(["x", 3, None])),
)
_NAMES = ["a", "b", "c", "d"]


def _objects(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    def build(
        properties: dict[str, Any], required: list[str], closed: bool, nullable: bool
    ) -> dict[str, Any]:
        keywords: dict[str, Any] = {
            "properties": properties,
            "required": [k for k in required if k in properties],
        }
        if closed:
            keywords["additionalProperties"] = False
        return _typed("object", nullable, keywords)

    return st.builds(
        build,
        st.dictionaries(st.sampled_from(_NAMES), children, min_size=1, max_size=3),
        st.lists(st.sampled_from(_NAMES), unique=True),
        st.booleans(),
        st.booleans(),
    )


def _arrays(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    bounds = st.fixed_dictionaries(
        {},
        optional={"minItems": st.integers(0, 2), "maxItems": st.integers(2, 4), "uniqueItems": st.just(True)},
    )
    return st.builds(
        lambda items, b, nullable: _typed("array", nullable, {"items": items, **b}),
        children,
        bounds,
        st.booleans(),
    )


def _unions(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda a, b, key: {key: [a, b]}, children, children, st.sampled_from(["anyOf", "oneOf"]))


_nodes = st.recursive(
    _leaves, lambda inner: st.one_of(_objects(inner), _arrays(inner), _unions(inner)), max_leaves=6
)
_schemas = st.builds(
    lambda properties, required: {"type": "object", "properties": properties, "required": required},
    st.dictionaries(st.sampled_from(_NAMES), _nodes, min_size=1, max_size=4),
    st.just([]),
)


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(schema=_schemas, seed=st.integers(0, 2**16))
def test_every_output_the_grammar_ends_breaks_only_named_keywords(walker, schema, seed):
    named = unenforced_keywords(schema, engine=walker.engine, max_items=4)
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    for output in _outputs(walker, schema, seed, walks=3):
        if output is None:
            continue  # did not end within the step limit (or an intersection left no token)
        value = json.loads(output)  # the grammar only ends on JSON
        unexplained = [e for e in validator.iter_errors(value) if not _explained(e, named)]
        assert not unexplained, (output, [e.message for e in unexplained], [str(k) for k in named])
