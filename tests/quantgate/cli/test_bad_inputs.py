"""Bad inputs to `run` and `load`: one line naming what and where, exit status 2, before any model loads."""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

import pytest

import quantgate.evaluate._evaluation_run
import quantgate.loadtest._loadtest_run
from evaluators.errors import QuantgateError
from quantgate.cli._main import main
from quantgate.inputs._gguf_files import read_gguf_layout
from tests.quantgate.inputs.tiny_gguf import write_tiny_gguf


class StartedError(QuantgateError, RuntimeError):
    """Raised by the stand-ins of the run and the load test: the checks let the command through."""


@pytest.fixture(autouse=True)
def no_model_loads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Stand-ins for the evaluation and the load test (which open the models); the calls they got."""
    calls: list[str] = []

    def started(*args: object, **kwargs: object) -> Path:
        calls.append("started")
        raise StartedError("the run started")

    monkeypatch.setattr(quantgate.evaluate._evaluation_run, "run_evaluation", started)
    monkeypatch.setattr(quantgate.loadtest._loadtest_run, "run_load_test", started)
    monkeypatch.setenv("QUANTGATE_SHA256_CACHE", str(tmp_path / "cache" / "sha256.json"))
    return calls


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return write_tiny_gguf(tmp_path / "good.gguf")


def _variants_file(tmp_path: Path, entries: list[tuple[str, Path, str | None]]) -> Path:
    text = ""
    for name, model, sha256 in entries:
        text += f'[[variants]]\nname = "{name}"\nbackend = "llamacpp"\nmodel = "{model}"\n'
        text += f'sha256 = "{sha256}"\n' if sha256 else ""
    path = tmp_path / "variants.toml"
    path.write_text(text)
    return path


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], calls: list[str]) -> str:
    """Run the command; it must exit 2 before starting, with one line on stderr and no traceback."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert calls == []  # neither the evaluation nor the load test started: no model loaded
    assert "Traceback" not in err
    assert err.startswith("quantgate: error: ")
    assert err.count("\n") == 1, err
    return err.removeprefix("quantgate: error: ").rstrip("\n")


def _run(variants: Path | str, out: Path) -> list[str]:
    return ["run", "--dataset", "invoices", "--variants", str(variants), "--out", str(out)]


def _load(variants: Path | str, out: Path) -> list[str]:
    return ["load", "--dataset", "invoices", "--variants", str(variants), "--out", str(out)]


@pytest.mark.parametrize("command", [_run, _load], ids=["run", "load"])
def test_a_missing_gguf_after_a_good_one_is_refused_up_front(tmp_path, good, capsys, no_model_loads, command):
    variants = _variants_file(tmp_path, [("F16", good, None), ("Q4_K_M", tmp_path / "gone.gguf", None)])
    message = _refused(capsys, command(variants, tmp_path / "runs"), no_model_loads)
    assert message == f"variant Q4_K_M: no GGUF file at {tmp_path}/gone.gguf"
    assert not (tmp_path / "runs").exists()


def test_a_truncated_gguf(tmp_path, good, capsys, no_model_loads):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(good.read_bytes()[:600])
    expected = read_gguf_layout(good).expected_size
    variants = _variants_file(tmp_path, [("F16", good, None), ("Q2_K", cut, None)])
    message = _refused(capsys, _run(variants, tmp_path / "runs"), no_model_loads)
    assert (
        message
        == f"variant Q2_K: {cut} is truncated: 600 of {expected} bytes (an interrupted download or copy?)"
    )


def test_random_bytes_given_as_a_shorthand(tmp_path, capsys, no_model_loads):
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"\x00" + random.Random(15).randbytes(2047))
    message = _refused(capsys, _run(f"llamacpp:{junk}", tmp_path / "runs"), no_model_loads)
    assert message.startswith(f"variant junk: {junk} is not a GGUF file: it starts with ")


def test_a_wrong_sha256(tmp_path, good, capsys, no_model_loads):
    actual = hashlib.sha256(good.read_bytes()).hexdigest()
    variants = _variants_file(tmp_path, [("Q4_K_M", good, "ab" * 32)])
    message = _refused(capsys, _run(variants, tmp_path / "runs"), no_model_loads)
    assert message == f"variant Q4_K_M: sha256 of {good} is {actual}, the variants file says {'ab' * 32}"
    assert (tmp_path / "cache" / "sha256.json").is_file()  # the hash is cached where the variable says


def test_good_files_with_their_sha256_pass_the_checks(tmp_path, good, capsys, no_model_loads):
    actual = hashlib.sha256(good.read_bytes()).hexdigest()
    variants = _variants_file(tmp_path, [("F16", good, actual), ("Q8_0", good, None)])
    assert main(_run(variants, tmp_path / "runs")) == 1  # the stand-in's RuntimeError: the run started
    assert no_model_loads == ["started"]
    assert "quantgate: error: the run started" in capsys.readouterr().err


def test_two_variants_of_one_name(tmp_path, good, capsys, no_model_loads):
    variants = _variants_file(tmp_path, [("same", good, None), ("same", good, None)])
    message = _refused(capsys, _run(variants, tmp_path / "runs"), no_model_loads)
    assert message == (
        f"two variants are named 'same': {variants} (variants entry 1) and {variants} (variants entry 2); "
        "names must be unique"
    )


@pytest.mark.parametrize("command", [_run, _load], ids=["run", "load"])
def test_out_is_a_file_or_under_one(tmp_path, good, capsys, no_model_loads, command):
    blocker = tmp_path / "runs"
    blocker.write_text("not a directory")
    message = _refused(capsys, command(f"llamacpp:{good}", blocker), no_model_loads)
    assert message == f"--out {blocker}: it is a file, not a directory"
    under = blocker / "deeper" / "still"
    message = _refused(capsys, command(f"llamacpp:{good}", under), no_model_loads)
    assert message == f"--out {under}: cannot create it: {blocker} is a file, not a directory"


@pytest.mark.unprivileged  # root writes into any directory: as root, it runs without that privilege
def test_out_under_a_read_only_directory(tmp_path, good, capsys, no_model_loads):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        message = _refused(capsys, _run(f"llamacpp:{good}", locked / "runs"), no_model_loads)
        assert message == f"--out {locked / 'runs'}: cannot create it: {locked} is not writable"
        message = _refused(capsys, _run(f"llamacpp:{good}", locked), no_model_loads)
        assert message == f"--out {locked}: the directory is not writable"
    finally:
        locked.chmod(0o755)


def test_out_not_writable_as_os_access_says(tmp_path, good, capsys, no_model_loads, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access

    def access(path: Path, mode: int, **kwargs: bool) -> bool:  # as a read-only directory is for a user
        return Path(path) != locked and real_access(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", access)
    message = _refused(capsys, _run(f"llamacpp:{good}", locked / "a" / "b"), no_model_loads)
    assert message == f"--out {locked / 'a' / 'b'}: cannot create it: {locked} is not writable"
    message = _refused(capsys, _run(f"llamacpp:{good}", locked), no_model_loads)
    assert message == f"--out {locked}: the directory is not writable"


def test_a_missing_out_directory_is_fine(tmp_path, good, capsys, no_model_loads):
    assert main(_run(f"llamacpp:{good}", tmp_path / "new" / "runs")) == 1  # the run started
    assert no_model_loads == ["started"]
    assert not (tmp_path / "new").exists()  # checking it created nothing


@pytest.mark.parametrize("command", [_run, _load], ids=["run", "load"])
def test_a_misspelt_option_is_refused_up_front_naming_the_variant_and_the_key(
    tmp_path, good, capsys, no_model_loads, command
):
    variants = tmp_path / "variants.toml"
    variants.write_text(
        f'[[variants]]\nname = "F16"\nbackend = "llamacpp"\nmodel = "{good}"\noptions = {{ n_ctxx = 4096 }}\n'
        '[[variants]]\nname = "q4"\nbackend = "ollama"\nmodel = "gemma3:1b"\noptions = { hots = "h:1" }\n'
    )
    message = _refused(capsys, command(variants, tmp_path / "runs"), no_model_loads)
    assert message.startswith(
        "variant 'F16': options.n_ctxx: not an option of the llamacpp backend (it accepts: chat_template, "
    )
    assert "; variant 'q4': options.hots: not an option of the ollama backend (it accepts: " in message
    assert "host, keep_alive" in message
    assert not (tmp_path / "runs").exists()
