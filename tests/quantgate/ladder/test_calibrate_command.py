"""`quantgate ladder --calibrate` from the command line, with fake llama.cpp tools and the bindings'
quantization stood in for (issue 48)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import quantgate.ladder._calibrate
import quantgate.ladder._quantize
from quantgate.cli._main import main
from quantgate.inputs._variants import load_variants_file
from quantgate.ladder._calibration_record import read_calibration_record
from quantgate.ladder._llama_tools import ENV_VAR as TOOLS_ENV
from tests.quantgate.ladder.fake_llama_tools import write_fake_f16


@pytest.fixture
def source(tmp_path, monkeypatch) -> Path:
    """A tiny F16 GGUF to start from; the bindings' quantization copies it; four characters a token."""
    monkeypatch.setattr(
        quantgate.ladder._quantize, "_quantize_into", lambda ref, quant, out: shutil.copy(ref, out)
    )
    monkeypatch.setattr(
        quantgate.ladder._calibrate, "vocabulary_token_counter", lambda model: lambda t: len(t) // 4
    )
    return write_fake_f16(tmp_path / "tiny.gguf")


def test_calibrated_variants_sit_beside_the_plain_ones_in_the_variants_file(
    source, tools, fake_reference, tmp_path, capsys
):
    out = tmp_path / "ladder"
    argv = ["ladder", "--source", str(source), "--quants", "Q2_K,Q4_K_M", "--out", str(out)]
    assert main([*argv, "--calibrate", "restaurants", "--calibration-cases", "8"]) == 0
    record = read_calibration_record(out / "calibration-restaurants" / "calibration.json")
    assert (record.answers, record.valid_answers) == ("reference", 7)
    assert len(fake_reference.calls) == 8 + 2  # each case, and two repairs of the unanswerable one
    variants = load_variants_file(out / "variants.toml").variants
    assert [v.name for v in variants] == ["F16", "Q2_K", "Q4_K_M", "Q2_K+imat", "Q4_K_M+imat"]
    calibrated = variants[3]
    assert calibrated.imatrix is not None
    assert calibrated.imatrix.cases == 8
    assert calibrated.imatrix.file == str(out / "calibration-restaurants" / "calibration.json")
    assert variants[1].imatrix is None
    assert variants[1].calibration == "none"
    printed = capsys.readouterr().out
    assert "Q2_K+imat" in printed
    assert "importance matrix from restaurants (8 cases" in printed


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--calibration-cases", "8"], "--calibration-cases needs --calibrate DATASET"),
        (["--calibration-answers", "gold"], "--calibration-answers needs --calibrate DATASET"),
        (["--calibrate", "no-such-dataset"], "no-such-dataset"),
        (["--calibrate", "restaurants", "--calibration-cases", "5000"], "cannot give 5000 calibration cases"),
        (["--calibrate-text", "no-such-text.txt"], "no-such-text.txt: cannot read the calibration text"),
    ],
)
def test_bad_calibration_input_exits_2_before_anything_is_built(
    source, tools, tmp_path, capsys, flags, message
):
    out = tmp_path / "ladder"
    assert main(["ladder", "--source", str(source), "--out", str(out), *flags]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists() or list(out.iterdir()) == []


def test_a_missing_tool_exits_2_before_the_ladder_is_built(source, tmp_path, monkeypatch, capsys):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv(TOOLS_ENV, str(tmp_path / "empty"))
    out = tmp_path / "ladder"
    assert main(["ladder", "--source", str(source), "--out", str(out), "--calibrate", "restaurants"]) == 2
    assert "llama-imatrix not found" in capsys.readouterr().err
    assert not out.exists()


def test_gold_calibration_answers_from_the_command_line(source, tools, fake_reference, tmp_path):
    out = tmp_path / "ladder"
    argv = ["ladder", "--source", str(source), "--quants", "Q2_K", "--out", str(out), "--calibrate"]
    assert main([*argv, "restaurants", "--calibration-cases", "4", "--calibration-answers", "gold"]) == 0
    record = read_calibration_record(out / "calibration-restaurants" / "calibration.json")
    assert (record.answers, record.valid_answers) == ("gold", None)
    assert fake_reference.calls == []
