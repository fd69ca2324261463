"""Every subcommand given bad input: a located one-line message and a non-zero status, never a traceback.

The commands run in process (`main`), so an exception escaping one fails the test with its
traceback; the captured output must not carry one either (a worker's, printed). None of these
inputs gets as far as loading a model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from quantgate.cli._main import main


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    """A directory of bad inputs: a torn dataset, garbage predictions, TOML and summary, a plain file."""
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "cases.jsonl").write_text('{"id": 1, "text": \n')
    (tmp_path / "ds" / "schema.json").write_text("{}")
    (tmp_path / "preds.jsonl").write_text("not json\n")
    (tmp_path / "latin1.jsonl").write_bytes(b'{"id": "caf\xe9", "raw": "{}"}\n')
    (tmp_path / "v.toml").write_text("x = [\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "summary.json").write_text("garbage{")
    (tmp_path / "afile").write_text("")
    return tmp_path


CASES = [
    # (arguments, with {bad} for the directory above; expected status; text the message must hold)
    ("datasets check {bad}/missing", 1, "no dataset directory {bad}/missing"),
    ("datasets check {bad}/ds", 1, "FAIL {bad}/ds"),
    ("score --dataset {bad}/missing --predictions {bad}/preds.jsonl", 2, "no dataset directory"),
    ("score --dataset contacts-events --predictions {bad}/missing.jsonl", 2, "{bad}/missing.jsonl"),
    ("score --dataset contacts-events --predictions {bad}/preds.jsonl", 1, "preds.jsonl:1"),
    ("score --dataset contacts-events --predictions {bad}/latin1.jsonl", 1, "latin1.jsonl:1: not UTF-8"),
    ("score --dataset contacts-events --predictions {bad}", 2, "{bad}: cannot read it: [Errno 21]"),
    ("run --dataset {bad}/missing", 2, "no dataset directory {bad}/missing"),
    ("run --dataset {bad}/ds", 2, "no usable cases"),
    ("run --variants {bad}/missing.toml", 2, "{bad}/missing.toml: [Errno 2] No such file"),
    ("run --variants {bad}/v.toml", 2, "{bad}/v.toml: Invalid value"),
    ("run --variants llamacpp:{bad}/missing.gguf", 2, "no GGUF file at {bad}/missing.gguf"),
    ("run --variants llamacpp:{bad}/afile", 2, "{bad}/afile is empty (0 bytes), not a GGUF file"),
    ("run --gates {bad}/missing.toml", 2, "{bad}/missing.toml: no such gates file"),
    ("run --gates {bad}/v.toml", 2, "{bad}/v.toml: not valid TOML"),
    ("run --out {bad}/afile", 2, "--out {bad}/afile: it is a file, not a directory"),
    ("run --resume {bad}/missing", 2, "--resume {bad}/missing: no such run directory"),
    ("run --resume {bad}/run", 2, "--resume {bad}/run: {bad}/run/summary.json: not JSON"),
    ("run --resume {bad}/run --limit 3", 2, "--limit cannot be given with it"),
    ("run --resume {bad}/run --variants {bad}/v.toml", 2, "{bad}/v.toml: Invalid value"),
    ("load --variants {bad}/v.toml", 2, "{bad}/v.toml: Invalid value"),
    ("load --out {bad}/afile/runs", 2, "cannot create it: {bad}/afile is a file"),
    ("decide {bad}/missing", 2, "{bad}/missing/summary.json: no such file"),
    ("decide {bad}/run", 2, "{bad}/run/summary.json: not JSON"),
    ("report {bad}/run", 2, "{bad}/run/summary.json: not JSON"),
    ("compare {bad}/missing {bad}/run", 2, "{bad}/missing/summary.json: no such file"),
    ("schemas {bad}/afile", 2, "schemas DIR {bad}/afile: it is a file, not a directory"),
    ("ollama modelfiles {bad}/afile/out", 2, "{bad}/afile/out: cannot create it: {bad}/afile is a file"),
    ("embed --dataset {bad}/missing", 2, "no dataset directory {bad}/missing"),
    ("embed --dataset {bad}/ds", 2, "no usable cases"),
    (
        "embed --dataset {bad}/afile",
        2,
        "{bad}/afile: no corpus.jsonl (a retrieval dataset) and no cases.jsonl",
    ),
    ("embed --variants {bad}/v.toml", 2, "{bad}/v.toml: Invalid value"),
    ("embed --variants llamacpp:{bad}/missing.gguf", 2, "no GGUF file at {bad}/missing.gguf"),
    ("embed --out {bad}/afile", 2, "--out {bad}/afile: it is a file, not a directory"),
    ("ladder --source {bad}/missing.gguf --out {bad}/ladder", 1, "no source GGUF at {bad}/missing.gguf"),
]


@pytest.mark.parametrize(("arguments", "status", "message"), CASES, ids=[c[0].split(" {")[0] for c in CASES])
def test_bad_input_gets_a_located_message_and_no_traceback(
    bad: Path, capsys: pytest.CaptureFixture[str], arguments: str, status: int, message: str
) -> None:
    assert main(arguments.format(bad=bad).split()) == status
    captured = capsys.readouterr()
    output = captured.out + captured.err
    assert "Traceback" not in output
    assert message.format(bad=bad) in output
