import json

import pytest

from quantgate.cli._main import main
from quantgate.inputs._dataset import DatasetError, check_dataset, load_dataset
from tests.fakes import TOTAL_SCHEMA, case, write_dataset


def messages(problems):
    return [str(p) for p in problems if p.severity == "error"]


def test_valid_dataset_loads(tmp_path):
    root = write_dataset(tmp_path / "ok", [case(1), case(2, tags=["numbers"])], examples=[case(9)])
    dataset = load_dataset(root)
    assert [c.id for c in dataset.cases] == ["c1", "c2"]
    assert [c.id for c in dataset.examples] == ["c9"]
    assert dataset.cases[1].tags == ("numbers",)
    assert len(dataset.sha256) == 64
    assert dataset.labeled


def test_every_error_is_listed_with_file_line_and_field(tmp_path):
    lines = [
        case(1),
        "{not json",
        case(1),
        {"id": "c4", "text": "   ", "expected": {"total": 1, "when": None}},
        {"id": "c5", "text": "x", "expected": {"total": "abc", "when": "yesterday"}},
        {"id": "c6", "text": "x", "expected": {"total": 1, "when": None}, "colour": "red"},
        [1, 2],
    ]
    root = write_dataset(tmp_path / "bad", lines, examples=[case(1)])
    dataset, problems = check_dataset(root)
    assert dataset is None
    assert messages(problems) == [
        "cases.jsonl:2: invalid JSON: Expecting property name enclosed in double quotes (column 2)",
        "cases.jsonl:3: id: duplicate id 'c1' (first at cases.jsonl:1)",
        "cases.jsonl:4: text: empty text",
        "cases.jsonl:5: expected.total: 'abc' is not of type 'number', 'null'",
        "cases.jsonl:5: expected.when: 'yesterday' is not a 'date'",
        "cases.jsonl:6: colour: Extra inputs are not permitted",
        "cases.jsonl:7: a line must be a JSON object",
        "examples.jsonl:1: id: duplicate id 'c1' (first at cases.jsonl:1)",
    ]
    with pytest.raises(DatasetError, match="8 error"):
        load_dataset(root)


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ("{oops", "schema.json: not valid JSON"),
        (
            {"type": "object", "properties": {"a": {"type": "strin"}}},
            "schema.json: properties.a.type: not a valid JSON Schema",
        ),
        (
            {"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}},
            "schema.json: a: unsupported construct 'oneOf'",
        ),
        (
            {"type": "array", "items": {"type": "string"}},
            "schema.json: <root>: the root must be an object",
        ),
    ],
)
def test_schema_errors(tmp_path, schema, expected):
    root = write_dataset(tmp_path / "s", [case(1)], schema=schema)
    dataset, problems = check_dataset(root)
    assert dataset is None
    assert messages(problems)[0].startswith(expected)


def test_missing_files_and_card(tmp_path):
    (tmp_path / "empty").mkdir()
    _, problems = check_dataset(tmp_path / "empty")
    assert messages(problems) == ["schema.json: missing", "cases.jsonl: missing"]
    root = write_dataset(tmp_path / "nocard", [case(1)], card=False)
    dataset, problems = check_dataset(root)
    assert dataset is not None
    assert [p.severity for p in problems] == ["warning"]


def test_unlabeled_cases_are_allowed(tmp_path):
    root = write_dataset(tmp_path / "u", [{"id": "a", "text": "hello"}])
    dataset = load_dataset(root)
    assert not dataset.labeled


def test_skip_invalid_cases_keeps_the_rest(tmp_path):
    root = write_dataset(tmp_path / "skip", [case(1), case(2, total="abc"), "{"])
    dataset = load_dataset(root, skip_invalid_cases=True)
    assert [c.id for c in dataset.cases] == ["c1"]
    assert [p.line for p in dataset.warnings] == [2, 3]


def test_cli_check_exits_1_and_lists_all_errors(tmp_path, capsys):
    good = write_dataset(tmp_path / "good", [case(1)])
    bad = write_dataset(tmp_path / "bad", [case(1, total="x"), case(1)])
    assert main(["datasets", "check", str(good), str(bad)]) == 1
    out, err = capsys.readouterr()
    assert f"ok   {good}" in out
    assert f"FAIL {bad}: 2 error(s)" in out
    assert "cases.jsonl:1: expected.total: 'x' is not of type" in err
    assert "cases.jsonl:2: id: duplicate id" in err
    assert main(["datasets", "check", str(good)]) == 0


def test_cli_check_warns_of_keywords_a_grammar_cannot_enforce(tmp_path, capsys):
    bounded = json.loads(json.dumps(TOTAL_SCHEMA))
    bounded["properties"]["total"]["minimum"] = 0
    root = write_dataset(tmp_path / "bounded", [case(1)], schema=bounded)
    assert main(["datasets", "check", str(root)]) == 0  # a warning, not an error
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"warning: {root}/schema.json: the gbnf grammar does not enforce total: minimum "
        "(llama.cpp's GBNF converter ignores it here)"
    ]  # llguidance enforces it, and the nullable date is enforced by both


SURROGATES = [
    case(1),
    r'{"id": "c2", "text": "a lone \ud800 surrogate"}',
    r'{"id": "c3", "text": "x", "expected": {"total": 1, "when": "\udfff"}}',
    r'{"id": "c4", "text": "x", "tags": ["ok", "\ud83d"]}',
    r'{"id": "c5\udc00", "text": "x"}',
    r'{"id": "c6", "text": "a pair: \ud83d\ude00"}',
]
"""Lines of cases.jsonl with lone surrogates (valid JSON escapes, but no UTF-8 text) in a case's
text, gold, tags and id; the last holds a whole pair (an emoji): not one."""


def test_a_lone_surrogate_is_refused_naming_its_line_and_field(tmp_path):
    _, problems = check_dataset(write_dataset(tmp_path / "d", SURROGATES))
    lone = "a \\uD800-\\uDFFF escape without its pair, not text that UTF-8 can write"
    assert messages(problems) == [
        f"cases.jsonl:2: text: a lone surrogate '\\ud800': {lone}",
        f"cases.jsonl:3: expected: a lone surrogate '\\udfff' at when: {lone}",
        f"cases.jsonl:4: tags[1]: a lone surrogate '\\ud83d': {lone}",
        f"cases.jsonl:5: id: a lone surrogate '\\udc00': {lone}",
    ]


def test_a_lone_surrogate_in_the_schema_is_refused(tmp_path):
    schema = json.dumps(TOTAL_SCHEMA).replace('"Total"', '"Total \\ud800"')
    _, problems = check_dataset(write_dataset(tmp_path / "d", [case(1)], schema=schema))
    assert [p.file for p in problems if p.severity == "error"] == ["schema.json"]
    assert "a lone surrogate '\\ud800' at properties.total.description" in messages(problems)[0]


def test_run_refuses_a_lone_surrogate_before_it_makes_a_run_directory(tmp_path, capsys):
    root = write_dataset(tmp_path / "d", SURROGATES[:2])
    assert main(["datasets", "check", str(root)]) == 1
    assert f"{root}/cases.jsonl:2: text: a lone surrogate '\\ud800'" in capsys.readouterr().err
    out = tmp_path / "runs"
    argv = ["run", "--all", "--dataset", str(root), "--variants", "ollama:x", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "cases.jsonl:2: text: a lone surrogate '\\ud800'" in err
    assert "Traceback" not in err
    assert not out.exists() or not any(out.iterdir())


def test_cli_check_unknown_directory(tmp_path, capsys):
    assert main(["datasets", "check", str(tmp_path / "nope")]) == 1
    assert "no dataset directory" in capsys.readouterr().err


def test_bundled_datasets_pass(bundled_dataset_dir):
    dataset, problems = check_dataset(bundled_dataset_dir)
    assert messages(problems) == []
    assert dataset is not None
    assert len([c for c in dataset.cases if c.expected is not None]) >= 40
    assert dataset.examples, "each bundled set has few-shot examples"


def test_bundled_datasets_cover_the_slices():
    from quantgate.inputs._dataset import bundled_datasets

    tags = {t for name in bundled_datasets() for c in load_dataset(name).cases for t in c.tags}
    assert {"lang:es", "lang:en", "numbers", "dates", "long", "lists", "code"} <= tags


def test_a_line_that_is_not_utf8_is_named_and_only_it_is_skipped(tmp_path, capsys):
    """A bad byte on line 301 of 400 (issue 46): that line is named and skipped, the other 399 kept
    (decoding the file in blocks named line 264 and dropped the 140 lines after it)."""
    root = write_dataset(tmp_path / "d", [case(i) for i in range(1, 401)])
    lines = (root / "cases.jsonl").read_bytes().splitlines(keepends=True)
    lines[300] = lines[300].replace(b"text 301", b"text \xff\xfe 301")
    (root / "cases.jsonl").write_bytes(b"".join(lines))
    _, problems = check_dataset(root)
    assert messages(problems) == ["cases.jsonl:301: not UTF-8: invalid start byte at byte 30 of the line"]
    dataset = load_dataset(root, skip_invalid_cases=True)
    assert len(dataset.cases) == 399
    assert "c301" not in {c.id for c in dataset.cases}
    assert [(p.line, p.severity) for p in dataset.warnings] == [(301, "warning")]
    assert main(["datasets", "check", str(root)]) == 1
    assert f"{root}/cases.jsonl:301: not UTF-8" in capsys.readouterr().err


def test_lines_end_as_in_a_text_file(tmp_path):
    """Lines split on \\n, \\r\\n or a lone \\r, as a text file reads them; blank lines count."""
    root = write_dataset(tmp_path / "d", [case(1)])
    one, two, three = (json.dumps(case(i)).encode() for i in (1, 2, 3))
    (root / "cases.jsonl").write_bytes(one + b"\r\n\n" + two + b"\r{x\n" + three)
    _, problems = check_dataset(root)
    assert messages(problems) == [
        "cases.jsonl:4: invalid JSON: Expecting property name enclosed in double quotes (column 2)"
    ]


def test_a_card_that_is_not_utf8_is_read_with_a_warning(tmp_path, capsys):
    """A README.md in Latin-1 crashed loading (issue 46): the card is documentation, so its bad
    bytes are replaced and a warning names the first."""
    root = write_dataset(tmp_path / "d", [case(1)])
    (root / "README.md").write_bytes("# Café\n".encode("latin-1"))
    dataset = load_dataset(root)
    assert dataset.card == "# Caf\ufffd\n"
    assert [str(p) for p in dataset.warnings] == [
        "README.md: not UTF-8 (invalid continuation byte at byte 6); read with the bad bytes replaced"
    ]
    assert main(["datasets", "check", str(root)]) == 0
    assert "README.md: not UTF-8" in capsys.readouterr().err


def test_a_dataset_directory_whose_name_is_not_utf8_is_refused_by_name(tmp_path, capsys):
    """`run --dataset $'d\\xff'` ended in two raw tracebacks (its name cannot be written to the run's
    UTF-8 files); it is refused naming the byte, before any run directory (issue 46)."""
    directory = write_dataset(tmp_path / "d\udcff", [case(1), case(2)])
    with pytest.raises(DatasetError, match=r"b'.*d\\xff'.*not UTF-8"):
        load_dataset(directory)
    argv = ["run", "--dataset", str(directory), "--variants", "ollama:x", "--out", str(tmp_path / "runs")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "not UTF-8" in err
    assert not (tmp_path / "runs").exists()
