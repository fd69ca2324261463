"""`quantgate ladder --imatrix FILE`: variants made with a ready-made importance matrix, its record, and
the files refused (missing, unreadable, not a matrix, another model's), with fake llama.cpp tools and
no model (issue 48)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import quantgate.ladder._calibrate
import quantgate.ladder._calibrate_text
import quantgate.ladder._quantize
from quantgate.cli._main import main
from quantgate.inputs._file_hashes import file_sha256
from quantgate.inputs._variants import load_variants_file
from quantgate.ladder._calibrate_file import ImatrixFileRequest, calibrate_from_file
from quantgate.ladder._calibration_record import read_calibration_record
from quantgate.ladder._llama_tool_calls import CalibrationError
from tests.quantgate.ladder.fake_llama_tools import write_fake_f16, write_matrix


def _quantize_calls(log: Path) -> list[list[str]]:
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [c for c in calls if c[0] == "llama-quantize" and c[1:] != ["--version"]]


@pytest.mark.parametrize(("legacy", "copied"), [(False, "imatrix.gguf"), (True, "imatrix.dat")])
def test_a_matrix_file_makes_the_file_arm_with_its_record(tools, fake_ladder, tmp_path, legacy, copied):
    reference = fake_ladder / "model-F16.gguf"
    given = write_matrix(tmp_path / ("mine.dat" if legacy else "mine.gguf"), reference, legacy=legacy)
    request = ImatrixFileRequest(imatrix=given, quants=["Q2_K", "Q4_K_M"])
    variants = calibrate_from_file(request, reference=reference, directory=fake_ladder)
    final = fake_ladder / "calibration-file-mine"
    assert [v.name for v in variants] == ["Q2_K+imat-file", "Q4_K_M+imat-file"]
    assert Path(variants[0].model).read_text() == f"fake Q2_K of model-F16.gguf with {copied}"
    assert [(c[1], Path(c[2]).name) for c in _quantize_calls(tools)] == [("--imatrix", copied)] * 2
    assert (final / copied).read_bytes() == given.read_bytes()
    record = read_calibration_record(final / "calibration.json")
    assert (record.source, record.dataset, record.imatrix_path, record.cases) == (
        "file",
        given.name,
        str(given.resolve()),
        [],
    )
    assert record.imatrix_sha256 == record.dataset_sha256 == file_sha256(given)
    assert (record.tokens, record.chunks, record.tool_version, record.answers) == (None, None, None, "none")
    imatrix = variants[0].imatrix
    assert imatrix is not None
    assert (imatrix.source, imatrix.cases, imatrix.tokens, imatrix.imatrix_sha256) == (
        "file",
        0,
        None,
        file_sha256(given),
    )
    assert (
        variants[0].calibration
        == f"importance matrix from the file {given.resolve()} (sha256 {file_sha256(given)[:12]})"
    )
    assert sorted(p.name for p in fake_ladder.iterdir()) == ["calibration-file-mine", "model-F16.gguf"]


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (
            lambda path, ref: path.write_bytes(b"\x01\x00\x00\x00garbage"),
            r"neither a GGUF importance matrix nor",
        ),
        (
            lambda path, ref: write_matrix(path, ref, prefix="blk.9."),
            r"not of model-F16.gguf: 2 of its 2 entries",
        ),
        (
            lambda path, ref: write_matrix(path, ref, legacy=True, prefix="blk.9."),
            r"not of model-F16.gguf: 2 of its 2 entries",
        ),
        (
            lambda path, ref: write_matrix(path, write_fake_f16(path.with_name("other.gguf"), columns=16)),
            r"16 columns; the model's: 8",
        ),
    ],
)
def test_a_file_that_is_not_a_matrix_of_the_reference_is_refused_and_nothing_is_left(
    tools, fake_ladder, tmp_path, write, message
):
    reference = fake_ladder / "model-F16.gguf"
    given = tmp_path / "given.dat"
    write(given, reference)
    with pytest.raises(CalibrationError, match=message) as refused:
        calibrate_from_file(
            ImatrixFileRequest(imatrix=given, quants=["Q2_K"]), reference=reference, directory=fake_ladder
        )
    assert str(given) in str(refused.value)
    assert _quantize_calls(tools) == []
    assert [p.name for p in fake_ladder.iterdir()] == ["model-F16.gguf"]


@pytest.fixture
def source(tmp_path, monkeypatch) -> Path:
    """A tiny F16 GGUF to start from; the bindings' quantization copies it; four characters a token."""
    monkeypatch.setattr(
        quantgate.ladder._quantize, "_quantize_into", lambda ref, quant, out: shutil.copy(ref, out)
    )
    for module in (quantgate.ladder._calibrate, quantgate.ladder._calibrate_text):
        monkeypatch.setattr(module, "vocabulary_token_counter", lambda model: lambda t: len(t) // 4)
    return write_fake_f16(tmp_path / "tiny.gguf")


def test_with_calibrate_and_calibrate_text_the_three_arms_sit_side_by_side(
    source, tools, fake_reference, tmp_path, capsys
):
    out = tmp_path / "ladder"
    given = write_matrix(tmp_path / "published.gguf", source)
    argv = ["ladder", "--source", str(source), "--quants", "Q2_K", "--out", str(out), "--imatrix", str(given)]
    assert main([*argv, "--calibrate", "restaurants", "--calibration-cases", "4", "--calibrate-text"]) == 0
    variants = load_variants_file(out / "variants.toml").variants
    assert [v.name for v in variants] == ["F16", "Q2_K", "Q2_K+imat", "Q2_K+imat-text", "Q2_K+imat-file"]
    assert [v.imatrix.source for v in variants[2:] if v.imatrix] == ["dataset", "text", "file"]
    directories = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert directories == [
        "calibration-file-published",
        "calibration-restaurants",
        "calibration-text-pride-and-prejudice",
    ]
    assert f"importance matrix from the file {given.resolve()}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        ("no-such-matrix.gguf", "no-such-matrix.gguf: cannot read the importance matrix: No such file"),
        ("a-directory", "a-directory: cannot read the importance matrix: Is a directory"),
    ],
)
def test_a_missing_or_unreadable_matrix_exits_2_before_anything_is_built(
    source, tools, tmp_path, capsys, matrix, message
):
    (tmp_path / "a-directory").mkdir()
    out = tmp_path / "ladder"
    argv = ["ladder", "--source", str(source), "--quants", "Q2_K", "--out", str(out)]
    assert main([*argv, "--imatrix", str(tmp_path / matrix)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_a_matrix_of_another_model_exits_2_naming_the_file(source, tools, tmp_path, capsys):
    other = write_matrix(tmp_path / "other.gguf", write_fake_f16(tmp_path / "other-model.gguf", columns=16))
    out = tmp_path / "ladder"
    argv = ["ladder", "--source", str(source), "--quants", "Q2_K", "--out", str(out), "--imatrix", str(other)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{other}: the importance matrix is not of tiny-F16.gguf" in err
    assert not [p for p in out.iterdir() if p.name.startswith(("calibration", ".calibration"))]
    assert not (out / "variants.toml").exists()
