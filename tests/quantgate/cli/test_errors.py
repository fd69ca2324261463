"""How `main` ends on an error: a `UsageError` exits 2, any other `QuantgateError` 1, each with its
message on one line; anything else (a bug, a library's ValueError) exits 1 with one line naming
its type and a log file that holds the traceback."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest

import quantgate.cli._datasets
from evaluators.errors import QuantgateError, UsageError
from quantgate.cli import main


@pytest.fixture
def log_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The temporary directory the traceback logs go to, for this test only."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _raising(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    """Make `quantgate datasets list` raise `error` from inside the command."""

    def listing() -> list[str]:
        raise error

    monkeypatch.setattr(quantgate.cli._datasets, "bundled_datasets", listing)


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    return err.rstrip("\n")


def test_a_stray_value_error_is_a_failure_with_its_traceback_logged(monkeypatch, capsys, log_dir):
    _raising(monkeypatch, ValueError("a library's complaint\nits second line"))
    assert main(["datasets", "list"]) == 1  # not 2: a library's ValueError is no usage error
    line = _one_line(capsys)
    assert line.startswith("quantgate: error: ValueError: a library's complaint ... (an unexpected error")
    found = re.search(r"its traceback is in (\S+)\)$", line)
    assert found is not None, line
    log = Path(found.group(1))
    assert log.parent == log_dir
    assert log.name.startswith("quantgate-error-")
    text = log.read_text(encoding="utf-8")
    assert text.splitlines()[0].endswith(": quantgate datasets list")  # the version, the command
    assert "Traceback (most recent call last)" in text
    assert "in listing" in text  # the frame that raised
    assert "ValueError: a library's complaint\nits second line" in text


def test_a_library_error_is_named_with_its_module(monkeypatch, capsys, log_dir):
    _raising(monkeypatch, json.JSONDecodeError("Expecting value", "{", 1))  # a ValueError too
    assert main(["datasets", "list"]) == 1
    expected = "quantgate: error: json.decoder.JSONDecodeError: Expecting value: line 1 column 2 (char 1) ("
    assert _one_line(capsys).startswith(expected)


def test_an_error_without_a_message_is_named_by_its_type(monkeypatch, capsys, log_dir):
    _raising(monkeypatch, KeyError())
    assert main(["datasets", "list"]) == 1
    assert _one_line(capsys).startswith("quantgate: error: KeyError (an unexpected error, likely a bug; ")


def test_a_usage_error_exits_2_with_its_message_and_no_log(monkeypatch, capsys, log_dir):
    _raising(monkeypatch, UsageError("--thing x: not a thing; give one of a, b"))
    assert main(["datasets", "list"]) == 2
    assert _one_line(capsys) == "quantgate: error: --thing x: not a thing; give one of a, b"
    assert list(log_dir.iterdir()) == []


def test_a_project_error_exits_1_with_its_message_and_no_log(monkeypatch, capsys, log_dir):
    _raising(monkeypatch, QuantgateError("variant Q2_K: the model could not be loaded"))
    assert main(["datasets", "list"]) == 1
    assert _one_line(capsys) == "quantgate: error: variant Q2_K: the model could not be loaded"
    assert list(log_dir.iterdir()) == []


def test_a_log_that_cannot_be_written_still_gets_its_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    _raising(monkeypatch, TypeError("unsupported operand"))
    assert main(["datasets", "list"]) == 1
    line = _one_line(capsys)
    assert line.startswith("quantgate: error: TypeError: unsupported operand (an unexpected error; ")
    assert "could not be logged" in line


def test_an_error_quoting_bytes_that_are_not_utf8_still_gets_its_line(monkeypatch, capsys, log_dir):
    """A command line holding a byte that is not UTF-8 (a file name, read as a lone surrogate) made
    the handler itself fail writing the log: two raw tracebacks instead of one line (issue 46)."""
    _raising(monkeypatch, OSError("cannot read d\udcff"))
    monkeypatch.setattr("sys.argv", ["quantgate", "datasets", "list", "d\udcff"])
    assert main(["datasets", "list"]) == 1
    line = _one_line(capsys)
    assert line.startswith("quantgate: error: OSError: cannot read d\\udcff (an unexpected error, likely")
    found = re.search(r"its traceback is in (\S+)\)$", line)
    assert found is not None, line
    assert "OSError: cannot read d\\udcff" in Path(found.group(1)).read_text(encoding="utf-8")
