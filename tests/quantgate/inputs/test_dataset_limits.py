"""Hostile schemas and gold records: a catastrophic pattern, a pattern RE2 cannot take, deep nesting."""

from __future__ import annotations

import json
import re
import time

import pytest

from evaluators import MAX_DEPTH, SchemaSupportError
from quantgate.cli._main import main
from quantgate.inputs._dataset import check_dataset
from quantgate.inputs._record_schema import record_schema


def _dataset(root, schema, expected):
    root.mkdir()
    (root / "schema.json").write_text(json.dumps(schema))
    (root / "cases.jsonl").write_text(json.dumps({"id": "c1", "text": "t", "expected": expected}) + "\n")
    (root / "README.md").write_text("# set\n")
    return root


def _code_schema(pattern: str) -> dict[str, object]:
    return {"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}}


def test_a_catastrophic_pattern_is_checked_in_well_under_a_second(tmp_path):
    root = _dataset(tmp_path / "re", _code_schema("^(a+)+$"), {"code": "a" * 40 + "!"})
    started = time.perf_counter()
    _, problems = check_dataset(root)
    assert time.perf_counter() - started < 1.0  # 43 s at 30 characters, over 120 s at 40, with `re`
    assert [str(p) for p in problems if p.severity == "error"] == [
        f"cases.jsonl:1: expected.code: '{'a' * 40}!' does not match '^(a+)+$'"
    ]


def test_a_backreference_is_refused_naming_the_file_the_pattern_and_re2(tmp_path, capsys):
    root = _dataset(tmp_path / "backref", _code_schema(r"^(a)\1$"), {"code": "aa"})
    assert main(["datasets", "check", str(root)]) == 1
    err = capsys.readouterr().err
    assert "schema.json: properties.code.pattern: " in err
    assert r"pattern '^(a)\\1$' is not RE2 syntax" in err


def test_a_deep_schema_is_a_named_error_not_a_recursion_error(tmp_path, capsys):
    root = _dataset(tmp_path / "deep", _deep_schema(120), None)
    assert main(["datasets", "check", str(root)]) == 1
    err = capsys.readouterr().err
    assert f"schema.json: <root>: not a valid JSON Schema: nested more than {MAX_DEPTH} levels deep" in err
    assert "recursion" not in err


def test_a_deep_gold_record_is_a_named_error(tmp_path):
    deep: object = "x"
    for _ in range(900):  # loads, but overflowed pydantic when the run copied the dataset
        deep = [deep]
    root = _dataset(tmp_path / "gold", {"type": "object", "properties": {"a": {"type": "string"}}},
                    {"a": "x", "extra": deep})  # fmt: skip
    _, problems = check_dataset(root)
    assert [str(p) for p in problems if p.severity == "error"] == [
        f"cases.jsonl:1: expected: nested more than {MAX_DEPTH} levels deep"
    ]


def _deep_schema(levels: int) -> dict[str, object]:
    node: dict[str, object] = {"type": "string"}
    for _ in range(levels):
        node = {"type": "object", "properties": {"a": node}}
    return node


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (_code_schema("(?=x)"), "properties.code.pattern: pattern '(?=x)' is not RE2 syntax"),
        (_deep_schema(1000), f"<root>: nested more than {MAX_DEPTH} levels deep"),
    ],
)
def test_record_schema_refuses_what_a_dataset_schema_refuses(schema, message):
    with pytest.raises(SchemaSupportError, match=re.escape(message)):
        record_schema(schema)
